package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// What a hostile command leaves behind for bwrapkit itself to trust on the host, tried
// with the built binary as a user runs it, and judged by the host's state afterwards.

// binaryRun runs the built bwrapkit with exactly environ and a bound of a minute.
func binaryRun(t *testing.T, environ []string, args ...string) outcome {
	t.Helper()
	return binaryRunWithin(t, time.Minute, environ, args...)
}

// binaryRunWithin is binaryRun with another bound: a real workload's cold build (a fresh
// project HOME compiles the standard library) took over a minute on a loaded 2-core CI
// machine as nobody.
func binaryRunWithin(t *testing.T, bound time.Duration, environ []string, args ...string) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, builtBinary, args...)
	cmd.Env = environ
	status, stdout, stderr := runStatus(t, cmd)
	return outcome{status, stdout, stderr}
}

// attackEnv is a user's environment with the probe cache in a place of the test's.
func attackEnv(t *testing.T, bwrap string) (environ []string, cache string) {
	cache = filepath.Join(livetest.TempDir(t), "cache")
	// TMPDIR too: the last fallback of the probe cache and the project HOMEs is
	// $TMPDIR/bwrapkit-<uid>, and an entry another run left in the real /tmp would be
	// found there first.
	return []string{"PATH=/usr/bin:/bin", "HOME=" + livetest.TempDir(t), "XDG_CACHE_HOME=" + cache, "BWRAPKIT_BWRAP=" + bwrap, "TMPDIR=" + livetest.TempDir(t)}, cache
}

// TestAttackReportPathCannotBeRedirected: the command plants a symlink at the report's
// name, and moves the report's directory away for a link to the victim's. The report must
// land where the caller said when the run began, and the victim stay untouched.
func TestAttackReportPathCannotBeRedirected(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	environ, _ := attackEnv(t, bwrap)
	workdir := livetest.TempDir(t)
	victimDir := livetest.TempDir(t)
	victim := filepath.Join(victimDir, "victim")
	os.WriteFile(victim, []byte("precious"), 0o644)

	report := filepath.Join(workdir, "report.json")
	got := binaryRun(t, environ, "run", "--workdir", workdir, "--report", report, "--", "ln", "-sf", victim, report)
	if got.status != 0 {
		t.Fatalf("status %d: %s", got.status, got.stderr)
	}
	if data, _ := os.ReadFile(victim); string(data) != "precious" {
		t.Errorf("the report followed a planted symlink onto %s: %q", victim, data)
	}
	if info, err := os.Lstat(report); err != nil || !info.Mode().IsRegular() {
		t.Errorf("the report is not a regular file at %s: %v %v", report, info, err)
	}

	out := filepath.Join(workdir, "out")
	os.Mkdir(out, 0o755)
	moved := filepath.Join(workdir, "out.moved")
	got = binaryRun(t, environ, "run", "--workdir", workdir, "--report", filepath.Join(out, "r.json"), "--",
		"sh", "-c", "mv "+out+" "+moved+" && ln -s "+victimDir+" "+out)
	if got.status != 0 {
		t.Fatalf("status %d: %s", got.status, got.stderr)
	}
	if _, err := os.Stat(filepath.Join(victimDir, "r.json")); err == nil {
		t.Errorf("the report followed the replaced directory into %s", victimDir)
	}
	if _, err := os.Stat(filepath.Join(moved, "r.json")); err != nil {
		t.Errorf("the report is not in the directory resolved before the run: %v", err)
	}
}

// TestAttackUnwritableReportIsBadUsageBeforeTheRun: a report that cannot be written is
// exit 2 before anything runs, not a run whose result is lost.
func TestAttackUnwritableReportIsBadUsageBeforeTheRun(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	environ, _ := attackEnv(t, bwrap)
	workdir := livetest.TempDir(t)
	marker := filepath.Join(workdir, "ran")
	fifo := filepath.Join(workdir, "fifo")
	syscall.Mkfifo(fifo, 0o644)
	for _, report := range []string{"/nonexistent/dir/r.json", filepath.Join(fifo, "r.json"), "/proc/version/r.json"} {
		got := binaryRun(t, environ, "run", "--workdir", workdir, "--report", report, "--", "touch", marker)
		if got.status != exitUsage || !strings.Contains(got.stderr, "--report") {
			t.Errorf("--report %s: status %d %q, want 2 naming --report", report, got.status, got.stderr)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("the command ran despite --report %s", report)
		}
	}
}

// TestAttackBwrapPlantedInTheWorkdirNeverRuns: an activated venv puts a project's
// .venv/bin first on PATH; a bwrap a command planted there (in this project, or in
// another one whose venv is active) must never run. A bwrap on PATH is used only from
// /usr, /bin or /sbin, so the search passes over it; named with --bwrap inside the
// workdir it is refused (125).
func TestAttackBwrapPlantedInTheWorkdirNeverRuns(t *testing.T) {
	livetest.SystemBwrap(t)
	project, other := livetest.TempDir(t), livetest.TempDir(t)
	venv := filepath.Join(project, ".venv", "bin")
	os.MkdirAll(venv, 0o755)
	marker := filepath.Join(livetest.TempDir(t), "planted-bwrap-ran")
	planted := filepath.Join(venv, "bwrap")
	livetest.WriteProgram(planted, []byte("#!/bin/sh\ntouch "+marker+"\nexec /usr/bin/bwrap \"$@\"\n"), 0o755)
	environ := []string{"PATH=" + venv + ":/usr/bin:/bin", "HOME=" + livetest.TempDir(t)}
	for _, workdir := range []string{project, other} {
		got := binaryRun(t, environ, "run", "--workdir", workdir, "--", "true")
		if got.status != 0 {
			t.Errorf("--workdir %s: status %d %q, want the system bwrap used", workdir, got.status, got.stderr)
		}
	}
	got := binaryRun(t, environ, "locate", "--json")
	if !strings.Contains(got.stdout, planted) || !strings.Contains(got.stdout, "outside /usr, /bin and /sbin") {
		t.Errorf("locate does not name the planted bwrap as refused: %s", got.stdout)
	}
	if got := binaryRun(t, environ, "--bwrap", planted, "run", "--workdir", project, "--", "true"); got.status != exitUnavailable || !strings.Contains(got.stderr, "inside the workdir") {
		t.Errorf("--bwrap of a bwrap inside the workdir: status %d %q, want 125 naming the workdir", got.status, got.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the planted bwrap ran on the host")
	}
}

// TestAttackProbeCacheCannotWeakenTheArgv: with the cache inside the workdir, the run is
// refused; and an entry forged to say this bwrap lacks --disable-userns is not believed:
// the next run still disables nested user namespaces.
func TestAttackProbeCacheCannotWeakenTheArgv(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		livetest.Skip(t, "no unshare (util-linux)")
	}
	environ, cache := attackEnv(t, bwrap)
	workdir := livetest.TempDir(t)

	inside := slices.Clone(environ)
	inside[2] = "XDG_CACHE_HOME=" + filepath.Join(workdir, ".cache")
	if got := binaryRun(t, inside, "run", "--workdir", workdir, "--", "true"); got.status != exitUsage || !strings.Contains(got.stderr, "bwrapkit's own state") {
		t.Errorf("a workdir enclosing the probe cache: status %d %q, want 2", got.status, got.stderr)
	}

	if got := binaryRun(t, environ, "run", "--workdir", workdir, "--", "true"); got.status != 0 {
		t.Fatalf("status %d: %s", got.status, got.stderr)
	}
	entries, _ := filepath.Glob(filepath.Join(cache, "bwrapkit", "probe-*", "*"))
	if len(entries) == 0 {
		t.Fatalf("no cache entry under %s", cache)
	}
	for _, entry := range entries {
		data, _ := os.ReadFile(entry)
		forged := strings.ReplaceAll(string(data), " disable-userns", "")
		if forged == string(data) {
			t.Fatalf("entry %s does not list disable-userns: %q", entry, data)
		}
		os.WriteFile(entry, []byte(forged), 0o600)
	}
	got := binaryRun(t, environ, "argv", "--workdir", workdir, "--", "true")
	var argv []string
	if json.Unmarshal([]byte(got.stdout), &argv) != nil || !slices.Contains(argv, "--disable-userns") {
		t.Errorf("a forged cache entry dropped --disable-userns: %s %s", got.stdout, got.stderr)
	}
	got = binaryRun(t, environ, "run", "--workdir", workdir, "--ro", unshare, "--", unshare, "--user", "true")
	if got.status == 0 {
		t.Errorf("a nested user namespace was created after the forged cache entry")
	}
}

// TestAttackProbeCacheEntriesAreNeverFollowedOrBlockedOn: an entry replaced by a FIFO
// must not hang the next run, and one replaced by a symlink must not make it write
// through the link.
func TestAttackProbeCacheEntriesAreNeverFollowedOrBlockedOn(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	environ, cache := attackEnv(t, bwrap)
	workdir := livetest.TempDir(t)
	if got := binaryRun(t, environ, "run", "--workdir", workdir, "--", "true"); got.status != 0 {
		t.Fatalf("status %d: %s", got.status, got.stderr)
	}
	entries, _ := filepath.Glob(filepath.Join(cache, "bwrapkit", "probe-*", "*"))
	if len(entries) == 0 {
		t.Fatal("no cache entry")
	}
	victim := filepath.Join(livetest.TempDir(t), "victim")
	os.WriteFile(victim, []byte("precious"), 0o644)
	for i, entry := range entries {
		os.Remove(entry)
		if i%2 == 0 {
			syscall.Mkfifo(entry, 0o600)
		} else {
			os.Symlink(victim, entry)
		}
	}
	done := make(chan outcome, 1)
	go func() { done <- binaryRun(t, environ, "run", "--workdir", workdir, "--", "true") }()
	select {
	case got := <-done:
		if got.status != 0 {
			t.Errorf("status %d: %s", got.status, got.stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run blocked on a planted cache entry")
	}
	if data, _ := os.ReadFile(victim); string(data) != "precious" {
		t.Errorf("a run wrote through a planted cache symlink: %q", data)
	}
}

// TestAttackBwrapkitAndItsFilterStayOutOfReach: bwrapkit's own binary in the workdir
// (`make build && ./bwrapkit run` in a checkout), and argv's --seccomp-file in the
// workdir, are files a command could replace for the next run: both are refused.
func TestAttackBwrapkitAndItsFilterStayOutOfReach(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	environ, _ := attackEnv(t, bwrap)
	workdir := livetest.TempDir(t)
	// A project of its own: without --workdir, the run below takes the nearest .git.
	os.Mkdir(filepath.Join(workdir, ".git"), 0o755)
	data, err := os.ReadFile(builtBinary)
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(workdir, "bwrapkit")
	if err := livetest.WriteProgram(self, data, 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(workdir, "ran")
	cmd := exec.Command(self, "run", "--", "touch", marker)
	cmd.Dir, cmd.Env = workdir, environ
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != exitUsage || !strings.Contains(string(out), "bwrapkit itself") {
		t.Errorf("a workdir holding the running bwrapkit: %v %s, want exit 2 naming it", err, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the command ran with bwrapkit's own binary writable")
	}
	filter := filepath.Join(workdir, "filter.bpf")
	got := binaryRun(t, environ, "argv", "--workdir", workdir, "--seccomp-file", filter, "--", "true")
	if got.status != exitUsage || !strings.Contains(got.stderr, "which the sandbox may write") {
		t.Errorf("--seccomp-file inside the workdir: status %d %q, want 2", got.status, got.stderr)
	}
	if _, err := os.Stat(filter); err == nil {
		t.Errorf("the filter was written inside the workdir")
	}
}
