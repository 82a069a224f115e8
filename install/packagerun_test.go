package install

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// standIn writes an executable shell script named like a package manager into a fresh
// PATH directory. It records its argv, what its stdin is, its process group and its
// environment, then runs behaviour.
func standIn(t *testing.T, name, behaviour string) string {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh for the stand-in package managers")
	}
	dir := t.TempDir()
	script := `#!/bin/sh
PATH=/usr/bin:/bin
dir=$(dirname "$0")
{
	printf 'argv:'; for arg in "$@"; do printf ' %s' "$arg"; done; printf '\n'
	printf 'stdin: %s\n' "$(readlink /proc/$$/fd/0)"
	printf 'stdin bytes: %s\n' "$(wc -c)"
	printf 'own group: %s\n' "$(test "$(cut -d' ' -f5 /proc/$$/stat)" = "$$" && echo yes || echo no)"
} >> "$dir/calls.log"
env > "$dir/env.log"
` + behaviour + "\n"
	if err := livetest.WriteProgram(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// provideBwrap is a stand-in behaviour: "install" puts a bwrap on PATH.
const provideBwrap = `ln -sf ` + systemBwrap + ` "$dir/bwrap"`

func packageOptions(dir string, uid int) Options {
	return Options{
		Method:  Package,
		Environ: []string{"PATH=" + dir, "BWRAPKIT_TEST_MARKER=kept", "DEBIAN_FRONTEND=dialog"},
		// The stand-in package lands in dir, which a real one never does.
		PackageDirs: []string{dir, "/usr", "/bin", "/sbin"},
		Geteuid:     func() int { return uid },
	}
}

func readLog(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("the stand-in left no %s: %v", name, err)
	}
	return string(data)
}

func TestPackageManagers(t *testing.T) {
	t.Parallel()
	loadBwrap(t)
	for _, manager := range Managers() {
		t.Run(manager.Name, func(t *testing.T) {
			t.Parallel()
			dir := standIn(t, manager.Name, provideBwrap)
			result, err := Install(context.Background(), packageOptions(dir, 0))
			if err != nil {
				t.Fatal(err)
			}
			calls := readLog(t, dir, "calls.log")
			for _, want := range []string{
				"argv: " + strings.Join(manager.Install, " ") + "\n",
				"stdin: /dev/null\n",
				"stdin bytes: 0\n",
				"own group: yes\n",
			} {
				if !strings.Contains(calls, want) {
					t.Errorf("the stand-in's record lacks %q:\n%s", want, calls)
				}
			}
			env := readLog(t, dir, "env.log")
			if !strings.Contains(env, "BWRAPKIT_TEST_MARKER=kept\n") {
				t.Errorf("the injected environment was not passed:\n%s", env)
			}
			for _, assignment := range manager.Env {
				if !strings.Contains(env, assignment+"\n") || strings.Contains(env, "DEBIAN_FRONTEND=dialog") {
					t.Errorf("%s missing or not overriding:\n%s", assignment, env)
				}
			}
			want := Result{Method: Package, Path: systemBwrap, SHA256: mustHash(t, systemBwrap), Version: loadBwrap(t).version, Changed: true}
			if result != want {
				t.Errorf("result = %+v, want %+v", result, want)
			}
		})
	}
}

func TestPackageAlreadyInstalled(t *testing.T) {
	t.Parallel()
	loadBwrap(t)
	dir := standIn(t, "pacman", provideBwrap)
	if err := os.Symlink(systemBwrap, filepath.Join(dir, "bwrap")); err != nil {
		t.Fatal(err)
	}
	result, err := Install(context.Background(), packageOptions(dir, 0))
	if err != nil || result.Changed {
		t.Fatalf("install over an installed bwrap: %+v, %v; want changed=false", result, err)
	}
}

// TestPackageRefreshAndRetry: apt-get install fails on a host with no package lists; the
// lists are refreshed and the install retried once.
func TestPackageRefreshAndRetry(t *testing.T) {
	t.Parallel()
	loadBwrap(t)
	dir := standIn(t, "apt-get", `case "$1" in
update) touch "$dir/updated" ;;
install) test -e "$dir/updated" || { echo "E: Unable to locate package bubblewrap" >&2; exit 100; }; `+provideBwrap+` ;;
esac`)
	if _, err := Install(context.Background(), packageOptions(dir, 0)); err != nil {
		t.Fatal(err)
	}
	calls := readLog(t, dir, "calls.log")
	var argvs []string
	for _, line := range strings.Split(calls, "\n") {
		if argv, ok := strings.CutPrefix(line, "argv: "); ok {
			argvs = append(argvs, argv)
		}
	}
	want := []string{"install -y --no-install-recommends bubblewrap", "update", "install -y --no-install-recommends bubblewrap"}
	if strings.Join(argvs, "|") != strings.Join(want, "|") {
		t.Errorf("calls = %q, want %q", argvs, want)
	}

	failing := standIn(t, "dnf", `echo "Error: Unable to find a match: bubblewrap" >&2; exit 1`)
	_, err := Install(context.Background(), packageOptions(failing, 0))
	if err == nil || !strings.Contains(err.Error(), "dnf did not install bubblewrap") || !strings.Contains(err.Error(), "exit status 1") {
		t.Errorf("a failing dnf: %v", err)
	}
}

func TestPackageNeedsRoot(t *testing.T) {
	t.Parallel()
	dir := standIn(t, "apt-get", provideBwrap)
	_, err := Install(context.Background(), packageOptions(dir, 1000))
	var needRoot *NeedRootError
	if !errors.As(err, &needRoot) {
		t.Fatalf("install as uid 1000: %v, want *NeedRootError", err)
	}
	if want := "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends bubblewrap"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not print the command %q", err, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "calls.log")); err == nil {
		t.Error("the package manager ran without root")
	}
}

func TestPackageNoManager(t *testing.T) {
	t.Parallel()
	_, err := Install(context.Background(), packageOptions(t.TempDir(), 0))
	if !errors.Is(err, ErrNoManager) {
		t.Errorf("install with no package manager: %v", err)
	}
}

// TestPackageHangKilledWithGroup: a manager that hangs, with a child of its own, is
// killed with its whole process group at the deadline.
func TestPackageHangKilledWithGroup(t *testing.T) {
	t.Parallel()
	dir := standIn(t, "zypper", `sleep 1000 &
echo $! > "$dir/child.pid"
sleep 1000`)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	options := packageOptions(dir, 0)
	// A pipe for output, as a terminal-less caller has: the child inherits it too, and
	// must not keep the install waiting for end-of-file.
	var output strings.Builder
	options.PackageOutput = &output
	started := time.Now()
	_, err := Install(ctx, options)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "killed with its process group") {
		t.Fatalf("a hanging manager: %v", err)
	}
	if elapsed := time.Since(started); elapsed > packageWaitDelay+5*time.Second {
		t.Errorf("returned after %s", elapsed)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(readLog(t, dir, "child.pid")))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the manager's child %d outlived the timeout", pid)
	}
}

// alive reports whether pid runs; a zombie waiting for a reaper does not count.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// TestAutoFallsBackOnlyWhenUnreachable: auto turns to the package manager when no pinned
// source answers, never when a source delivered the wrong bytes.
func TestAutoFallsBackOnlyWhenUnreachable(t *testing.T) {
	t.Parallel()
	bwrap := loadBwrap(t)
	unreachable := bwrap.artifact(Source{URL: "http://127.0.0.1:1/bwrap"}, Source{URL: "file:///nonexistent/bwrap"})
	wrong := bwrap.variant().artifact(Source{URL: writeFile(t, "bwrap", bwrap.data)})

	dir := standIn(t, "apk", provideBwrap)
	options := packageOptions(dir, 0)
	options.Method, options.Home, options.Artifact = Auto, filepath.Join(t.TempDir(), "home"), unreachable
	result, err := Install(context.Background(), options)
	if err != nil || result.Method != Package {
		t.Fatalf("auto with unreachable sources: %+v, %v; want the package method", result, err)
	}

	options.Geteuid = func() int { return 1000 }
	_, err = Install(context.Background(), options)
	var needRoot *NeedRootError
	var fetchErr *FetchError
	if !errors.As(err, &needRoot) || !errors.As(err, &fetchErr) {
		t.Errorf("auto without root: %v; want both the sources' and the package manager's reasons", err)
	}
	// The advice gets the pin before the distribution's older package.
	if text := err.Error(); !strings.Contains(text, "--mirror DIR") || strings.Index(text, "--mirror DIR") > strings.Index(text, needRoot.Command) {
		t.Errorf("auto without root: %q; want the pinned bwrap's way (--mirror DIR) before %q", text, needRoot.Command)
	}

	wrongDir := standIn(t, "apk", provideBwrap)
	options = packageOptions(wrongDir, 0)
	options.Method, options.Home, options.Artifact = Auto, filepath.Join(t.TempDir(), "home"), wrong
	_, err = Install(context.Background(), options)
	if !errors.As(err, &fetchErr) || fetchErr.Unreachable() {
		t.Fatalf("auto with a wrong pin: %v", err)
	}
	if _, err := os.Stat(filepath.Join(wrongDir, "calls.log")); err == nil {
		t.Error("a pin mismatch fell back to the package manager")
	}
}

// TestPackageLiveAptGet runs the real apt-get on a host where bubblewrap is installed:
// success, and nothing changed.
func TestPackageLiveAptGet(t *testing.T) {
	requireRoot(t, "run apt-get")
	status, err := exec.Command("dpkg-query", "-W", "-f=${Status}", "bubblewrap").Output()
	if err != nil || string(status) != "install ok installed" {
		t.Skipf("needs Debian's bubblewrap package installed (dpkg-query: %q, %v)", status, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	result, err := Install(ctx, Options{Method: Package, Geteuid: os.Geteuid})
	if err != nil {
		t.Fatal(err)
	}
	if result.Changed || result.Method != Package || result.Path != systemBwrap || result.Version == "" {
		t.Errorf("apt-get over an installed bubblewrap: %+v, want changed=false at %s", result, systemBwrap)
	}
}

func mustHash(t *testing.T, name string) string {
	t.Helper()
	sum, _, err := hashFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}
