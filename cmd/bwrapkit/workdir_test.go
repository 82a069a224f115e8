package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

func TestProjectRoot(t *testing.T) {
	repos := map[string]bool{"/src/app": true, "/home/u": true, "/home/u/code/lib": true, "/": true, "/srv/mono": true, "/srv/mono/vendor/x": true}
	holds := func(dir string) bool { return repos[dir] }
	for _, tc := range []struct {
		start string
		stops []string
		want  string
	}{
		{"/src/app/cmd/tool", nil, "/src/app"},
		{"/src/app", nil, "/src/app"},
		{"/src/other/pkg", nil, "/src/other/pkg"},                         // none above but /: not taken
		{"/", nil, "/"},                                                   // standing at / itself
		{"/home/u/code/lib/sub", []string{"/home/u"}, "/home/u/code/lib"}, // the nearest wins
		{"/home/u/notes", []string{"/home/u"}, "/home/u/notes"},           // a dotfiles repository at HOME is never the project
		{"/home/u", []string{"/home/u"}, "/home/u"},                       // standing at HOME: its own .git (refused later)
		{"/srv/mono/vendor/x/y", nil, "/srv/mono/vendor/x"},               // a nested repository is its own project
	} {
		if got := projectRoot(tc.start, tc.stops, holds); got != tc.want {
			t.Errorf("projectRoot(%s, %v) = %s, want %s", tc.start, tc.stops, got, tc.want)
		}
	}
}

// runIn runs the built binary in dir with environ.
func runFromDir(t *testing.T, dir string, environ []string, args ...string) outcome {
	t.Helper()
	cmd := exec.Command(builtBinary, args...)
	cmd.Dir, cmd.Env = dir, environ
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	status := 0
	if exitErr, ok := err.(*exec.ExitError); ok {
		status = exitErr.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return outcome{status: status, stdout: stdout.String(), stderr: stderr.String()}
}

// TestE2EWorkdirIsTheProjectRoot: started in a package directory without --workdir, the
// workdir is the repository's root (go.mod and the rest writable), the command starts
// where the user stands, and --print-policy says both. A .git that is a symlink makes no
// project root.
func TestE2EWorkdirIsTheProjectRoot(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	environ, _ := attackEnv(t, bwrap)
	repo := livetest.TempDir(t)
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(repo, "internal", "pkg")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	got := runFromDir(t, sub, environ, "run", "--print-policy")
	var effective struct{ Workdir, Cwd string }
	if err := json.Unmarshal([]byte(got.stdout), &effective); err != nil || got.status != 0 {
		t.Fatalf("--print-policy: %d %v %s %s", got.status, err, got.stdout, got.stderr)
	}
	if effective.Workdir != repo || effective.Cwd != filepath.Join("internal", "pkg") {
		t.Errorf("--print-policy from %s: workdir %q cwd %q, want %q and internal/pkg", sub, effective.Workdir, effective.Cwd, repo)
	}
	got = runFromDir(t, sub, environ, "run", "--", "sh", "-c", "pwd && touch ../../go.mod")
	if got.status != 0 || strings.TrimSpace(got.stdout) != sub {
		t.Errorf("run from %s: %d %q %q", sub, got.status, got.stdout, got.stderr)
	}
	if _, err := os.Stat(filepath.Join(repo, "go.mod")); err != nil {
		t.Errorf("the project root was not the workdir: %v", err)
	}
	// A link at .git makes no project: the walk passes it for the real one above.
	linked := filepath.Join(repo, "linked")
	inner := filepath.Join(linked, "inner")
	os.MkdirAll(inner, 0o755)
	os.Symlink(livetest.TempDir(t), filepath.Join(linked, ".git"))
	got = runFromDir(t, inner, environ, "run", "--print-policy")
	if err := json.Unmarshal([]byte(got.stdout), &effective); err != nil || effective.Workdir != repo {
		t.Errorf("a .git symlink made %q the workdir, want %s (%v %s)", effective.Workdir, repo, err, got.stderr)
	}
}

// TestE2EVenvLinkHintNamesTheTarget: a venv's python that links to an interpreter the
// sandbox does not show is explained by the link's target and the prefix to bind.
func TestE2EVenvLinkHintNamesTheTarget(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	environ, _ := attackEnv(t, bwrap)
	workdir := livetest.TempDir(t)
	prefix := filepath.Join(livetest.TempDir(t), "versions", "3.12.1")
	os.MkdirAll(filepath.Join(prefix, "bin"), 0o755)
	python := filepath.Join(prefix, "bin", "python3.12")
	livetest.WriteProgram(python, []byte("#!/bin/sh\n"), 0o755)
	os.MkdirAll(filepath.Join(workdir, ".venv", "bin"), 0o755)
	os.Symlink(python, filepath.Join(workdir, ".venv", "bin", "python"))
	got := binaryRun(t, environ, "run", "--workdir", workdir, "--", ".venv/bin/python", "-V")
	want := "is a link to " + python + ", which the sandbox does not show; bind it with --ro " + prefix
	if got.status != 127 || !strings.Contains(got.stderr, want) {
		t.Errorf("venv python linking outside: %d %q, want 127 and %q", got.status, got.stderr, want)
	}
	// And the hint is right: with the prefix bound, the link works.
	got = binaryRun(t, environ, "run", "--workdir", workdir, "--ro", prefix, "--", ".venv/bin/python", "-V")
	if got.status != 0 {
		t.Errorf("with --ro %s: %d %q", prefix, got.status, got.stderr)
	}
}

// TestE2EToolSwitchesPassThrough: PYTHONDONTWRITEBYTECODE (and the other listed tool
// switches) reach the command; a variable not on the list does not.
func TestE2EToolSwitchesPassThrough(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	environ, _ := attackEnv(t, bwrap)
	environ = append(environ, "PYTHONDONTWRITEBYTECODE=1", "GOFLAGS=-mod=mod", "NPM_TOKEN=secret")
	got := binaryRun(t, environ, "run", "--workdir", livetest.TempDir(t), "--", "sh", "-c", `echo "$PYTHONDONTWRITEBYTECODE|$GOFLAGS|$NPM_TOKEN"`)
	if got.status != 0 || strings.TrimSpace(got.stdout) != "1|-mod=mod|" {
		t.Errorf("inside: %d %q %q, want 1|-mod=mod|", got.status, got.stdout, got.stderr)
	}
}

// TestE2EInterruptedRunSaysSo: SIGINT to bwrapkit ends the sandbox with 130 and one line
// on stderr that says it was interrupted.
func TestE2EInterruptedRunSaysSo(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	environ, _ := attackEnv(t, bwrap)
	marker := fmt.Sprintf("1001.%d", time.Now().UnixNano()%1000000007)
	cmd := exec.Command(builtBinary, "run", "--workdir", livetest.TempDir(t), "--", "sleep", marker)
	var stderr bytes.Buffer
	cmd.Env, cmd.Stderr = environ, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(sleepers(marker)) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the sandboxed sleep never started")
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	// One line says it (a bwrap without --overlay adds its own warning before the run).
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if cmd.ProcessState.ExitCode() != 130 || strings.Count(stderr.String(), "interrupted") != 1 || !strings.HasPrefix(lines[len(lines)-1], "bwrapkit: interrupted (SIGINT)") {
		t.Errorf("after SIGINT: exit %d, stderr %q", cmd.ProcessState.ExitCode(), stderr.String())
	}
}
