package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// sandboxRun runs the test binary as a helper inside a sandbox built by bwrap.
type sandboxRun struct {
	bwrap   string
	request Request
	timeout time.Duration
	env     []string // the caller's environment, on top of LANG and the tests' cache
}

func (s sandboxRun) run(t *testing.T, args ...string) (Result, string, string, error) {
	t.Helper()
	exe := testExecutable(t)
	if s.request.Workdir == "" {
		s.request.Workdir = t.TempDir()
	}
	s.request.ReadOnly = append(s.request.ReadOnly, exe)
	s.request.Env = append(slices.Clone(s.request.Env), helperEnv+"=1")
	policy, err := NewPolicy(s.request, append([]string{"LANG=C.UTF-8", "XDG_CACHE_HOME=" + os.Getenv("XDG_CACHE_HOME")}, s.env...))
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	result, err := Run(ctx, policy, append([]string{exe}, args...), Options{
		Bwrap: s.bwrap, Stdout: &stdout, Stderr: &stderr, Timeout: s.timeout,
	})
	return result, stdout.String(), stderr.String(), err
}

// forEachBwrap runs the test against every real bwrap on this machine.
func forEachBwrap(t *testing.T, test func(t *testing.T, bwrap string)) {
	for _, bwrap := range livetest.Bwraps(t) {
		t.Run(bwrap.Name, func(t *testing.T) {
			t.Parallel()
			test(t, bwrap.Path)
		})
	}
}

func mustRun(t *testing.T, s sandboxRun, args ...string) string {
	t.Helper()
	result, stdout, stderr, err := s.run(t, args...)
	if err != nil {
		t.Fatalf("run %v: %v\nstderr: %s", args, err, stderr)
	}
	if !result.Started || result.ExitCode != 0 {
		t.Fatalf("run %v: %+v\nstdout: %s\nstderr: %s", args, result, stdout, stderr)
	}
	return stdout
}

func TestLiveWorkdirWriteLandsOnHost(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		workdir := t.TempDir()
		out := mustRun(t, sandboxRun{bwrap: bwrap, request: Request{Workdir: workdir}}, "write", filepath.Join(workdir, "made-inside"))
		if got := outputLines(out)[filepath.Join(workdir, "made-inside")]; got != "ok" {
			t.Fatalf("write inside the workdir: %s", got)
		}
		data, err := os.ReadFile(filepath.Join(workdir, "made-inside"))
		if err != nil || string(data) != "written inside" {
			t.Fatalf("the host does not see the file: %q %v", data, err)
		}
	})
}

func TestLiveWritesOutsideTheWorkdirFail(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		parent := livetest.TempDir(t)
		workdir := filepath.Join(parent, "project")
		sibling := filepath.Join(parent, "sibling")
		for _, dir := range []string{workdir, sibling} {
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		targets := []string{filepath.Join(parent, "in-parent"), filepath.Join(sibling, "in-sibling"), "/etc/in-etc", "/usr/in-usr", "/in-root"}
		out := mustRun(t, sandboxRun{bwrap: bwrap, request: Request{Workdir: workdir}}, append([]string{"write"}, targets...)...)
		lines := outputLines(out)
		for _, target := range targets {
			if lines[target] == "ok" || lines[target] == "" {
				t.Errorf("write to %s succeeded inside the sandbox (%q)", target, lines[target])
			}
			if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s exists on the host after the sandbox wrote it", target)
			}
		}
		if lines["/etc/in-etc"] != "read-only file system" {
			t.Errorf("/etc write: want EROFS (root remounted read-only), got %q", lines["/etc/in-etc"])
		}
	})
}

func TestLiveGitAndProtectedPathsAreReadOnly(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		workdir := t.TempDir()
		for path, content := range map[string]string{".git/config": "[core]\n", "secrets/key": "k"} {
			full := filepath.Join(workdir, path)
			os.MkdirAll(filepath.Dir(full), 0o755)
			if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		gitConfig, key := filepath.Join(workdir, ".git/config"), filepath.Join(workdir, "secrets/key")
		out := mustRun(t, sandboxRun{bwrap: bwrap, request: Request{Workdir: workdir, Protect: []string{"secrets"}}},
			"write", gitConfig, filepath.Join(workdir, ".git/hooks-new"), key, filepath.Join(workdir, "free"))
		lines := outputLines(out)
		for _, path := range []string{gitConfig, filepath.Join(workdir, ".git/hooks-new"), key} {
			if lines[path] != "read-only file system" {
				t.Errorf("write %s: want read-only file system, got %q", path, lines[path])
			}
		}
		if lines[filepath.Join(workdir, "free")] != "ok" {
			t.Errorf("the rest of the workdir must stay writable: %q", lines[filepath.Join(workdir, "free")])
		}
		if data, _ := os.ReadFile(gitConfig); string(data) != "[core]\n" {
			t.Errorf(".git/config changed on the host: %q", data)
		}
	})
}

func TestLiveSecretsAreHidden(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		home := t.TempDir() // the caller's home: outside the workdir, so never bound
		canary := filepath.Join(home, ".ssh-key")
		if err := os.WriteFile(canary, []byte("secret"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := mustRun(t, sandboxRun{bwrap: bwrap}, "read", "/etc/shadow", canary, "/root/.bashrc", "/etc/passwd")
		lines := outputLines(out)
		for _, path := range []string{"/etc/shadow", canary, "/root/.bashrc"} {
			if lines[path] == "ok" {
				t.Errorf("%s is readable inside the sandbox", path)
			}
		}
		if lines["/etc/passwd"] != "ok" {
			t.Errorf("/etc/passwd is on the allowlist and should be readable: %q", lines["/etc/passwd"])
		}
	})
}

func TestLiveNetworkIsolation(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { listener.Close() }) // after the parallel subtests, unlike defer
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	address := listener.Addr().String()
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		if got := strings.TrimSpace(mustRun(t, sandboxRun{bwrap: bwrap}, "connect", address)); got == "ok" {
			t.Errorf("host loopback listener %s reachable without --net", address)
		}
		if got := strings.TrimSpace(mustRun(t, sandboxRun{bwrap: bwrap, request: Request{Network: true}}, "connect", address)); got != "ok" {
			t.Errorf("host loopback listener %s unreachable with --net: %s", address, got)
		}
	})
}

func TestLiveProcessesCapabilitiesAndTmp(t *testing.T) {
	hostMarker, err := os.CreateTemp("/tmp", "bwrapkit-host-*")
	if err != nil {
		t.Fatal(err)
	}
	hostMarker.Close()
	t.Cleanup(func() { os.Remove(hostMarker.Name()) })
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		workdir := t.TempDir()
		procs := strings.Fields(mustRun(t, sandboxRun{bwrap: bwrap, request: Request{Workdir: workdir}}, "procs"))
		if len(procs) > 3 || len(procs) == 0 {
			t.Errorf("/proc inside lists %d processes (%v); want only the sandbox's own", len(procs), procs)
		}
		status := mustRun(t, sandboxRun{bwrap: bwrap, request: Request{Workdir: workdir}}, "status")
		if !strings.Contains(status, "CapEff:\t0000000000000000") {
			t.Errorf("capabilities left inside the sandbox:\n%s", status)
		}
		inTmp := filepath.Join("/tmp", filepath.Base(hostMarker.Name()))
		if strings.HasPrefix(workdir, "/tmp/") && inTmp == workdir {
			t.Skip("workdir collides with the marker")
		}
		lines := outputLines(mustRun(t, sandboxRun{bwrap: bwrap, request: Request{Workdir: workdir}}, "read", inTmp))
		if lines[inTmp] == "ok" {
			t.Errorf("the host's %s is visible in the sandbox's /tmp", inTmp)
		}
	})
}

func TestLiveExitStatuses(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		s := sandboxRun{bwrap: bwrap}
		if result, _, _, err := s.run(t, "exit", "7"); err != nil || result.ExitCode != 7 || result.Signal != 0 {
			t.Errorf("exit 7: %+v %v", result, err)
		}
		if result, _, _, err := s.run(t, "kill-self"); err != nil || result.ExitCode != 128+15 || result.Signal != 15 {
			t.Errorf("killed by SIGTERM: %+v %v", result, err)
		}
		policy, err := NewPolicy(Request{Workdir: t.TempDir()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		result, err := Run(context.Background(), policy, []string{"/no/such/command"}, Options{Bwrap: bwrap, Stderr: &stderr})
		if err != nil || result.ExitCode != 127 || result.Started || result.Failure != CommandNotFound {
			t.Errorf("missing command: %+v %v, stderr %s", result, err, stderr.String())
		}
		result, err = Run(context.Background(), policy, []string{"/etc/passwd"}, Options{Bwrap: bwrap, Stderr: &stderr})
		if err != nil || result.ExitCode != 126 {
			t.Errorf("non-executable command: %+v %v, stderr %s", result, err, stderr.String())
		}
	})
}

func TestLiveTimeoutKillsEscapedGrandchild(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		marker := fmt.Sprintf("bwrapkit-escape-%d-%d", os.Getpid(), time.Now().UnixNano())
		result, stdout, stderr, err := sandboxRun{bwrap: bwrap, timeout: 2 * time.Second}.run(t, "escape", marker)
		if err != nil || !result.TimedOut || result.ExitCode != 124 {
			t.Fatalf("timeout: %+v %v\nstdout %s\nstderr %s", result, err, stdout, stderr)
		}
		if !strings.Contains(stdout, "escaped") {
			t.Fatalf("the grandchild never started: %s %s", stdout, stderr)
		}
		// The kernel reaps a dead pid namespace asynchronously: allow it a bound.
		var survivors []string
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if survivors = processesWith(marker); len(survivors) == 0 {
				return
			}
		}
		t.Fatalf("processes survived the timeout: %v", survivors)
	})
}

// processesWith lists host pids whose command line contains marker.
func processesWith(marker string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, entry := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(marker)) {
			pids = append(pids, entry.Name())
		}
	}
	return pids
}

func TestLiveNestedUserNamespacesDisabled(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		features, err := Probe(context.Background(), bwrap)
		if err != nil {
			t.Fatal(err)
		}
		if !features.Has("disable-userns") {
			t.Skipf("%s (%s) has no --disable-userns", bwrap, features.Build)
		}
		if got := strings.TrimSpace(mustRun(t, sandboxRun{bwrap: bwrap}, "unshare-user")); got == "ok" {
			t.Errorf("a user namespace could be created inside the sandbox")
		}
	})
}

// failClosed asserts the command did not run: it would have written a marker.
func failClosed(t *testing.T, bwrap string, want Reason) *UnavailableError {
	t.Helper()
	workdir := t.TempDir()
	marker := filepath.Join(workdir, "ran")
	policy, err := NewPolicy(Request{Workdir: workdir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	result, err := Run(context.Background(), policy, []string{"/usr/bin/touch", marker}, Options{Bwrap: bwrap, LaunchTimeout: 2 * time.Second})
	var unavailable *UnavailableError
	if !errors.As(err, &unavailable) {
		t.Fatalf("bwrap %s: want *UnavailableError, got %+v, %v", bwrap, result, err)
	}
	if unavailable.Reason != want {
		t.Errorf("bwrap %s: reason %s, want %s (%s)", bwrap, unavailable.Reason, want, unavailable.Message())
	}
	if result.Started {
		t.Errorf("result says started: %+v", result)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the command ran although the sandbox was reported unavailable")
	}
	if !strings.Contains(unavailable.Message(), "next: ") {
		t.Errorf("message names no next step: %s", unavailable.Message())
	}
	return unavailable
}

func TestLiveFailClosed(t *testing.T) {
	dir := t.TempDir()
	notExecutable := filepath.Join(dir, "bwrap-noexec")
	os.WriteFile(notExecutable, []byte("#!/bin/sh\n"), 0o644)
	// An impostor that knows bwrap's --help but never builds a sandbox.
	help, _ := exec.Command(livetest.SystemBwrap(t), "--help").CombinedOutput()
	os.WriteFile(filepath.Join(dir, "help.txt"), help, 0o644)
	impostor := filepath.Join(dir, "bwrap-impostor")
	livetest.WriteProgram(impostor, []byte("#!/bin/sh\ncase \"$1\" in --help|--version) cat "+filepath.Join(dir, "help.txt")+"; exit 0;; esac\nexit 0\n"), 0o755)
	hanging := filepath.Join(dir, "bwrap-hangs")
	livetest.WriteProgram(hanging, []byte("#!/bin/sh\ncase \"$1\" in --help|--version) cat "+filepath.Join(dir, "help.txt")+"; exit 0;; esac\nexec sleep 600\n"), 0o755)

	cases := []struct {
		name  string
		bwrap string
		want  Reason
	}{
		{"true as bwrap", "/bin/true", ReasonUnsupported},
		{"false as bwrap", "/bin/false", ReasonUnsupported},
		{"missing path", filepath.Join(dir, "nothing-here"), ReasonNotFound},
		{"no path at all", "", ReasonNotFound},
		{"not executable", notExecutable, ReasonNotExecutable},
		{"directory", dir, ReasonNotExecutable},
		{"impostor that passes the probe", impostor, ReasonNoLaunchProof},
		{"impostor that hangs before launch", hanging, ReasonLaunchTimeout},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			failClosed(t, c.bwrap, c.want)
		})
	}
}

// TestLiveKernelRefusal runs the runner inside an outer sandbox that forbids user
// namespaces: a real refusal by the kernel, not a mock.
func TestLiveKernelRefusal(t *testing.T) {
	system := livetest.SystemBwrap(t)
	if os.Getenv("BWRAPKIT_REFUSAL_INNER") == "1" {
		failClosed(t, system, ReasonSetupFailed)
		return
	}
	exe := testExecutable(t)
	outer := exec.Command(system, "--unshare-user", "--disable-userns", "--ro-bind", "/", "/",
		"--proc", "/proc", "--dev", "/dev", "--bind", "/tmp", "/tmp", "--",
		exe, "-test.run=^TestLiveKernelRefusal$", "-test.v")
	outer.Env = append(os.Environ(), "BWRAPKIT_REFUSAL_INNER=1", livetest.ExpectRefusalEnv+"=1")
	out, err := outer.CombinedOutput()
	if err != nil {
		t.Fatalf("inside the outer sandbox: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("inner test did not pass:\n%s", out)
	}
}

func TestLiveCancelKillsTheSandbox(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	exe := testExecutable(t)
	policy, err := NewPolicy(Request{Workdir: t.TempDir(), ReadOnly: []string{exe}, Env: []string{helperEnv + "=1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("bwrapkit-cancel-%d", time.Now().UnixNano())
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	_, err = Run(ctx, policy, []string{exe, "escape", marker}, Options{Bwrap: bwrap})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if len(processesWith(marker)) == 0 {
			return
		}
	}
	t.Fatalf("processes survived the cancellation: %v", processesWith(marker))
}

// TestLiveGitWorktreeFileIsReadOnly: in a worktree .git is a file naming the real git dir.
func TestLiveGitWorktreeFileIsReadOnly(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		workdir := livetest.TempDir(t)
		gitFile := filepath.Join(workdir, ".git")
		if err := os.WriteFile(gitFile, []byte("gitdir: /src/main/.git/worktrees/x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		lines := outputLines(mustRun(t, sandboxRun{bwrap: bwrap, request: Request{Workdir: workdir}}, "write", gitFile))
		if lines[gitFile] != "read-only file system" {
			t.Errorf("write .git file: %q", lines[gitFile])
		}
		if data, _ := os.ReadFile(gitFile); string(data) != "gitdir: /src/main/.git/worktrees/x\n" {
			t.Errorf(".git file changed on the host: %q", data)
		}
	})
}

// TestLiveInheritedDescriptorsStayOutside: a descriptor the caller left inheritable (no
// close-on-exec, as one inherited from a parent process is) must not reach the command.
// The canary stays open until every parallel subtest is done (t.Cleanup, not defer: the
// parent returns before its parallel subtests run), and a control run outside any
// sandbox proves the helper sees it when nothing keeps it out.
func TestLiveInheritedDescriptorsStayOutside(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "open-secret")
	os.WriteFile(secret, []byte("s"), 0o600)
	fd, err := syscall.Open(secret, syscall.O_RDONLY, 0) // deliberately without O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	canary := strconv.Itoa(fd)

	control := exec.Command(testExecutable(t), "fds")
	control.Env = []string{helperEnv + "=1"}
	// A duplicate for the control, closed here: an *os.File on fd itself would close it
	// from its finalizer, and the cleanup would then close a reused number.
	dup, err := unix.Dup(fd)
	if err != nil {
		t.Fatal(err)
	}
	controlFile := os.NewFile(uintptr(dup), secret)
	control.ExtraFiles = []*os.File{controlFile} // lands at 3, inheritable
	out, err := control.Output()
	controlFile.Close()
	if err != nil || !strings.Contains(string(out), secret) {
		t.Fatalf("control: the helper does not see an inherited descriptor (%v): %s", err, out)
	}
	// One bwrap after another, not in parallel: each run marks the canary close-on-exec
	// in this process, so it is made inheritable again before the next.
	for _, bwrap := range livetest.Bwraps(t) {
		t.Run(bwrap.Name, func(t *testing.T) {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
				t.Fatalf("the canary descriptor %s: %v", canary, err)
			}
			lines := outputLines(mustRun(t, sandboxRun{bwrap: bwrap.Path}, "fds"))
			for name, target := range lines {
				if name != "0" && name != "1" && name != "2" {
					t.Errorf("descriptor %s (%s) reached the sandboxed command", name, target)
				}
			}
		})
	}
}
