package seccomp

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

func testExecutable(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// TestFilterLive loads the program into a helper process the way bwrap does and
// tries every probe against the real kernel.
func TestFilterLive(t *testing.T) {
	dir := t.TempDir()
	out, err := probesUnder(t, "load", dir)
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	checkProbes(t, out, dir)
}

// TestFilterLiveBehindThePreamble: the program behind the launch gate's preamble, as
// bwrap reads it from a run's filter pipe, is the same filter to the real kernel; the
// preamble alone is refused by it (so a bwrap left with only the preamble fails).
func TestFilterLiveBehindThePreamble(t *testing.T) {
	dir := t.TempDir()
	out, err := probesUnder(t, "load-preamble", dir)
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	checkProbes(t, out, dir)
	out, err = probesUnder(t, "load-preamble-alone", dir)
	if !strings.Contains(out, "seccomp(SECCOMP_SET_MODE_FILTER): invalid argument") {
		t.Fatalf("the preamble alone: %v\n%s\nwant the kernel's EINVAL", err, out)
	}
}

// probesUnder runs every probe in the helper after it loaded its filter as mode says (see
// TestMain), and returns what it printed.
func probesUnder(t *testing.T, mode, dir string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testExecutable(t), "probe", dir)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestProbesNeedTheFilter runs the probes with no filter: each refusal must then come
// out differently, or the live tests above could pass with the filter gone. The listed
// probes may meet the same answer from a kernel configured against them; there this
// test cannot tell, and says so.
func TestProbesNeedTheFilter(t *testing.T) {
	hostDependent := map[string]string{
		"socket-vsock":      "a kernel without AF_VSOCK answers EAFNOSUPPORT",
		"socket-vsock-high": "a kernel without AF_VSOCK answers EAFNOSUPPORT",
		"io_uring_setup":    "kernel.io_uring_disabled=2 answers EPERM",
		"bpf":               "some kernels check the capability first and answer EPERM",
		"userfaultfd":       "before Linux 5.11 an unprivileged caller gets EPERM",
		"fanotify_init":     "before Linux 5.13 a caller without CAP_SYS_ADMIN gets EPERM",
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testExecutable(t), "probe", dir)
	cmd.Env = append(os.Environ(), helperEnv+"=unfiltered")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, value, _ := strings.Cut(line, ": ")
		got[name] = value
	}
	for _, p := range probes(dir) {
		if p.want == "ok" || got[p.name] != p.want {
			continue
		}
		if why, ok := hostDependent[p.name]; ok {
			t.Logf("%s: %s without the filter too (%s); this host cannot show the rule working", p.name, p.want, why)
			continue
		}
		t.Errorf("%s: %s without the filter too: the probe cannot tell whether the filter works", p.name, p.want)
	}
}

// TestFilterThroughBwrap hands the program to each real bwrap on fd 3, as the runner
// will, and tries the same probes in the sandbox.
func TestFilterThroughBwrap(t *testing.T) {
	for _, bwrap := range livetest.Bwraps(t) {
		t.Run(bwrap.Name, func(t *testing.T) {
			dir := t.TempDir()
			out, err := runInBwrap(t, bwrap.Path, dir, "probe", dir)
			if err != nil {
				t.Fatalf("%s: %v\n%s", bwrap.Path, err, out)
			}
			checkProbes(t, out, dir)
		})
	}
}

func TestX32KilledLive(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x32 exists on amd64 only")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testExecutable(t), "x32")
	cmd.Env = append(os.Environ(), helperEnv+"=load")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("helper: %v, want it killed by SIGSYS\n%s", err, out)
	}
	status := exit.Sys().(syscall.WaitStatus)
	if !status.Signaled() || status.Signal() != syscall.SIGSYS {
		t.Errorf("helper ended with %v, want killed by SIGSYS\n%s", exit, out)
	}
}

func TestX32KilledThroughBwrap(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x32 exists on amd64 only")
	}
	for _, bwrap := range livetest.Bwraps(t) {
		t.Run(bwrap.Name, func(t *testing.T) {
			out, err := runInBwrap(t, bwrap.Path, t.TempDir(), "x32")
			var exit *exec.ExitError
			// bwrap reports a command killed by signal N as exit status 128+N.
			if !errors.As(err, &exit) || exit.ExitCode() != 128+int(syscall.SIGSYS) {
				t.Errorf("%s: %v, want exit status %d (SIGSYS)\n%s", bwrap.Path, err, 128+int(syscall.SIGSYS), out)
			}
		})
	}
}

func runInBwrap(t *testing.T, bwrapPath, dir string, args ...string) (string, error) {
	t.Helper()
	arch, err := NativeArch()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := Program(arch)
	if err != nil {
		t.Fatal(err)
	}
	memfd, err := unix.MemfdCreate("bwrapkit-seccomp", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	program := os.NewFile(uintptr(memfd), "seccomp program")
	defer program.Close()
	if _, err := program.Write(raw); err != nil {
		t.Fatal(err)
	}
	if _, err := program.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	argv := []string{"--unshare-all", "--unshare-user", "--die-with-parent",
		"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--bind", dir, dir,
		"--seccomp", "3", "--", testExecutable(t)}
	cmd := exec.CommandContext(ctx, bwrapPath, append(argv, args...)...)
	cmd.Env = append(os.Environ(), helperEnv+"=loaded")
	cmd.ExtraFiles = []*os.File{program} // fd 3
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// checkProbes holds the helper's lines to each probe's expectation, then judges the
// directory the helper worked in, as the host sees it afterwards.
func checkProbes(t *testing.T, out, dir string) {
	t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, value, _ := strings.Cut(line, ": ")
		got[name] = value
	}
	for _, p := range probes(dir) {
		if got[p.name] != p.want {
			t.Errorf("%s: %q, want %s", p.name, got[p.name], p.want)
		}
	}
	if t.Failed() {
		t.Logf("helper output:\n%s", out)
	}
	for name, want := range map[string]os.FileMode{"mode": 0o755, "plain": 0o644, "dir": os.ModeDir | 0o755} {
		info, err := os.Lstat(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("host: %v", err)
		} else if info.Mode() != want {
			t.Errorf("host: %s has mode %v, want %v", name, info.Mode(), want)
		}
	}
	for _, name := range []string{"setgid-file", "setuid-file", "setgid-dir", "setuid-node"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("host: %s exists (%v); the filter should have refused to create it", name, err)
		}
	}
}
