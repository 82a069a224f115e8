package main

import (
	"encoding/json"
	"errors"
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

// goBin is where this project's machines have Go (see HELPERS and ci-deps.sh).
const goBin = "/usr/local/go/bin"

// TestRunToolchainFlagsLive: what an agent or CI job meets first. A command that is not
// on the inside PATH is a 127 that says where the host has it and which flag adds it;
// that flag works; a --ro symlink is found at its own name; colour and CI variables and
// USER pass through; the report says why a 127 did not start.
func TestRunToolchainFlagsLive(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	if _, err := os.Stat(filepath.Join(goBin, "go")); err != nil {
		livetest.Skip(t, "no Go at "+goBin)
	}
	workdir := livetest.TempDir(t)
	environ, _ := attackEnv(t, bwrap)
	environ[0] = "PATH=/usr/bin:/bin:" + goBin
	environ = append(environ, "CI=true", "NO_COLOR=1", "FORCE_COLOR=3", "COLORTERM=truecolor", "TERM=xterm-256color", "SECRET=s")
	report := filepath.Join(livetest.TempDir(t), "report.json")

	got := binaryRun(t, environ, "run", "--workdir", workdir, "--report", report, "--", "go", "version")
	want := "go: not found inside the sandbox (PATH=/usr/local/bin:/usr/bin:/bin); the host has /usr/local/go/bin/go: add --path /usr/local/go/bin"
	if got.status != 127 || !strings.Contains(got.stderr, want) {
		t.Errorf("go without --path: status %d, stderr %q; want 127 and %q", got.status, got.stderr, want)
	}
	var doc struct {
		Started      bool
		ExitCode     int    `json:"exit_code"`
		BwrapVersion string `json:"bwrap_version"`
		Error        *reportError
		Policy       struct {
			Schema, Workdir, Git string
			HomeDir              string `json:"home_dir"`
		}
	}
	data, _ := os.ReadFile(report)
	if err := json.Unmarshal(data, &doc); err != nil || doc.Started || doc.ExitCode != 127 || doc.Error == nil ||
		doc.Error.Reason != "command-not-found" || !strings.Contains(doc.Error.Message, "--path /usr/local/go/bin") ||
		doc.BwrapVersion == "" || doc.Policy.Schema != "bwrapkit.policy/v1" || doc.Policy.Git != "readonly" || doc.Policy.HomeDir == "" {
		t.Errorf("report of a 127: %s %v", data, err)
	}

	got = binaryRun(t, environ, "run", "--workdir", workdir, "--path", goBin, "--", "go", "env", "GOROOT", "GOCACHE")
	if got.status != 0 || !strings.HasPrefix(got.stdout, "/usr/local/go\n") {
		t.Errorf("go with --path: status %d %q %q", got.status, got.stdout, got.stderr)
	}

	got = binaryRun(t, environ, "run", "--workdir", workdir, "--ro", "/etc/os-release", "--", "sh", "-c", `test -L /etc/os-release && grep -q ^ID= /etc/os-release && echo linked`)
	if got.status != 0 || got.stdout != "linked\n" {
		t.Errorf("--ro of a symlink: status %d %q %q", got.status, got.stdout, got.stderr)
	}

	// --path of a symlink (a versioned toolchain's "current" link): the link is on the
	// inside PATH and leads to the bound directory.
	tools := livetest.TempDir(t)
	os.Mkdir(filepath.Join(tools, "v1"), 0o755)
	livetest.WriteProgram(filepath.Join(tools, "v1", "hello-tool"), []byte("#!/bin/sh\necho hello from v1\n"), 0o755)
	os.Symlink("v1", filepath.Join(tools, "current"))
	current := filepath.Join(tools, "current")
	got = binaryRun(t, environ, "run", "--workdir", workdir, "--path", current, "--", "sh", "-c", `echo "$PATH"; test -L `+current+` && hello-tool`)
	if got.status != 0 || got.stdout != current+":/usr/local/bin:/usr/bin:/bin\nhello from v1\n" {
		t.Errorf("--path of a symlink: status %d %q %q", got.status, got.stdout, got.stderr)
	}

	got = binaryRun(t, environ, "run", "--workdir", workdir, "--", "env")
	for _, entry := range []string{"CI=true", "NO_COLOR=1", "FORCE_COLOR=3", "COLORTERM=truecolor", "TERM=xterm-256color", "USER=", "LOGNAME="} {
		if !strings.Contains(got.stdout, "\n"+entry) {
			t.Errorf("%s is not set inside:\n%s", entry, got.stdout)
		}
	}
	if strings.Contains(got.stdout, "SECRET") || strings.Contains(got.stdout, "HOME="+workdir) {
		t.Errorf("environment inside:\n%s", got.stdout)
	}
}

// TestRunStartsInTheCurrentDirectory: run from a subdirectory of the workdir, the command
// starts there (go test from cobra/doc finds its go.mod); --cwd chooses.
func TestRunStartsInTheCurrentDirectory(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	workdir := livetest.TempDir(t)
	sub := filepath.Join(workdir, "a", "b")
	os.MkdirAll(sub, 0o755)
	environ, _ := attackEnv(t, bwrap)
	for _, c := range []struct {
		dir  string
		args []string
		want string
	}{
		{sub, []string{"--workdir", workdir}, sub},
		{sub, []string{"--workdir", workdir, "--cwd", "a"}, filepath.Join(workdir, "a")},
		{t.TempDir(), []string{"--workdir", workdir}, workdir},
	} {
		cmd := exec.Command(builtBinary, append(append([]string{"run"}, c.args...), "--", "pwd")...)
		cmd.Dir, cmd.Env = c.dir, environ
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) != c.want {
			t.Errorf("from %s with %q: %q %v, want %s", c.dir, c.args, out, err, c.want)
		}
	}
}

// TestRunStderrOnATerminal runs bwrapkit on a pty (script(1)): the command's stderr is the
// terminal itself, and 127 and 126 are still told apart and explained once.
func TestRunStderrOnATerminal(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	script, err := exec.LookPath("script")
	if err != nil {
		livetest.Skip(t, "no script(1) (util-linux)")
	}
	workdir := livetest.TempDir(t)
	environ, _ := attackEnv(t, bwrap)
	onPty := func(command string) (string, int) {
		cmd := exec.Command(script, "-qec", builtBinary+" run --workdir "+workdir+" -- "+command, "/dev/null")
		cmd.Env = environ
		out, err := cmd.Output()
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return string(out), exitErr.ExitCode()
		}
		return string(out), 0
	}
	if out, status := onPty(`sh -c 'test -t 1 && test -t 2 && echo both-terminals'`); status != 0 || !strings.Contains(out, "both-terminals") {
		t.Errorf("stderr is not the terminal: %d %q", status, out)
	}
	out, status := onPty("no-such-command")
	if status != 127 || strings.Count(out, "not found inside the sandbox") != 1 || strings.Count(out, "bwrap: execvp") > 1 {
		t.Errorf("127 on a terminal: %d %q", status, out)
	}
	if out, status := onPty("/etc/passwd"); status != 126 || !strings.Contains(out, "cannot be executed") {
		t.Errorf("126 on a terminal: %d %q", status, out)
	}
	if out, status := onPty(`sh -c 'kill -TERM $$'`); status != 128+15 {
		t.Errorf("a signal on a terminal: %d %q", status, out)
	}
}

// TestRunStderrSharedWithStdoutKeepsOrder: with 2>&1 (one open file) the lines come out
// in the order they were written.
func TestRunStderrSharedWithStdoutKeepsOrder(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	workdir := livetest.TempDir(t)
	environ, _ := attackEnv(t, bwrap)
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	// Direct, chosen: Debian's bwrap would otherwise add its one fallback warning line; and
	// no cgroup bounds, chosen: a user gets no cgroup here, which a run would say.
	cmd := exec.Command(builtBinary, "run", "--workdir-mode", "direct", "--limit", "memory=unlimited", "--limit", "pids=unlimited", "--workdir", workdir, "--", "sh", "-c", "echo o1; echo e1 >&2; echo o2; echo e2 >&2")
	cmd.Env, cmd.Stdout, cmd.Stderr = environ, out, out
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out.Name())
	if string(data) != "o1\ne1\no2\ne2\n" {
		t.Errorf("2>&1 order: %q", data)
	}
	// Separate files: bwrapkit still reads stderr, and 127 is explained from bwrap's line.
	got := binaryRun(t, environ, "run", "--workdir", workdir, "--", "no-such-command")
	if got.status != 127 || strings.Count(got.stderr, "not found inside the sandbox") != 1 {
		t.Errorf("127 with a piped stderr: %d %q", got.status, got.stderr)
	}
}

// TestE2EReportAfterASignal: SIGTERM to bwrapkit mid-run is exit 143, and the report
// says the command started and was ended by signal 15.
func TestE2EReportAfterASignal(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	environ, _ := attackEnv(t, bwrap)
	report := filepath.Join(livetest.TempDir(t), "report.json")
	marker := fmt.Sprintf("1000.%d", time.Now().UnixNano()%1000000007) // sleep's argument, unique
	cmd := exec.Command(builtBinary, "run", "--workdir", livetest.TempDir(t), "--report", report, "--", "sleep", marker)
	cmd.Env = environ
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(sleepers(marker)) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the sandboxed sleep never started")
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	var doc struct {
		Started  bool
		ExitCode int `json:"exit_code"`
		Signal   int
		Error    *reportError
	}
	data, _ := os.ReadFile(report)
	if err := json.Unmarshal(data, &doc); err != nil || !doc.Started || doc.ExitCode != 143 || doc.Signal != 15 || doc.Error == nil || doc.Error.Reason != "interrupted" {
		t.Errorf("report after SIGTERM: %s %v", data, err)
	}
}

// TestRunWorkdirThePermissionsRefuse: a workdir the caller cannot enter or write is bad
// usage naming the permission, before any launch (root passes every permission check,
// so this runs as a user: make test-unprivileged).
func TestRunWorkdirThePermissionsRefuse(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root passes every permission check; make test-unprivileged runs this as nobody")
	}
	bwrap := livetest.SystemBwrap(t)
	environ, _ := attackEnv(t, bwrap)
	locked := filepath.Join(livetest.TempDir(t), "locked")
	os.Mkdir(locked, 0o555)
	defer os.Chmod(locked, 0o755)
	for _, dir := range []string{locked, "/root"} {
		got := binaryRun(t, environ, "run", "--workdir", dir, "--", "true")
		if got.status != exitUsage || !strings.Contains(got.stderr, "cannot enter and write it") || strings.Contains(got.stderr, "doctor") {
			t.Errorf("workdir %s: status %d %q", dir, got.status, got.stderr)
		}
	}
}
