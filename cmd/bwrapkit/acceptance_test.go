package main

import (
	"github.com/bwrapkit/bwrapkit/doctor"
	"strconv"
	"syscall"

	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// Acceptance: the built binary run as a newcomer runs it (README: `./bwrapkit doctor`), in
// the environments newcomers bring, each judged by the exit status, every check's status
// and the host afterwards.

// newcomerPATH is what `env -i` plus a login's default PATH gives.
const newcomerPATH = "PATH=/usr/sbin:/usr/bin:/sbin:/bin"

type doctorDoc struct {
	Status string
	Checks []struct{ ID, Status, Summary, Detail, Remedy string }
}

// runNewcomer runs prefix + builtBinary + args with exactly env.
func runNewcomer(t *testing.T, prefix, env []string, args ...string) (int, string, string) {
	t.Helper()
	argv := append(append(append([]string{}, prefix...), "env", "-i"), env...)
	argv = append(append(argv, builtBinary), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/"
	return runStatus(t, cmd)
}

// runStatus runs cmd with its output captured: its exit status, stdout and stderr. A
// command that cannot be started at all ends the test.
func runStatus(t *testing.T, cmd *exec.Cmd) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	status := 0
	if exit, ok := err.(*exec.ExitError); ok {
		status = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return status, stdout.String(), stderr.String()
}

// healthyNewcomer runs the README's command (text) and its JSON twin, and asserts exit 0
// and every check: ok, except those that warn by design (warnsByDesign).
func healthyNewcomer(t *testing.T, prefix, env []string) {
	t.Helper()
	status, stdout, stderr := runNewcomer(t, prefix, env, "doctor")
	if status != 0 || !strings.Contains(stdout, "this host can sandbox") || strings.Contains(stdout, "✗") {
		t.Fatalf("`bwrapkit doctor` exit %d:\n%s\n%s", status, stdout, stderr)
	}
	status, stdout, stderr = runNewcomer(t, prefix, env, "doctor", "--json")
	var doc doctorDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("exit %d: %v\n%s\n%s", status, err, stdout, stderr)
	}
	if status != 0 || doc.Status == "fail" || len(doc.Checks) != len(doctor.IDs()) {
		t.Errorf("--json: exit %d, status %s, %d checks", status, doc.Status, len(doc.Checks))
	}
	for _, check := range doc.Checks {
		// Run as another user (prefix: nobody), the limits may warn that runs get no
		// cgroup where this test's own user gets one (root on a hybrid host).
		keeperOnly := len(prefix) > 0 && check.ID == "selftest.limits" && strings.Contains(check.Summary, "keeper only")
		if check.Status != "ok" && !(check.Status == "warn" && (warnsByDesign(check.ID) || keeperOnly)) {
			t.Errorf("%s: %s: %s\n%s", check.ID, check.Status, check.Summary, check.Detail)
		}
	}
}

// asNobody is the argv prefix that runs a command as nobody, or nil when this test already
// runs as nobody; ok is false when neither is possible.
func asNobody() (prefix []string, ok bool) {
	switch os.Geteuid() {
	case 0:
		return []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}, true
	case 65534:
		return nil, true
	}
	return nil, false
}

func requireLive(t *testing.T) {
	t.Helper()
	livetest.SystemBwrap(t)
}

// noLeftovers fails if a doctor left a planted secret or a self-test directory in dir.
// Other packages' tests run doctors at the same time (as root, in the same /root), and
// theirs exist while they run: a leftover is one that is still there a few seconds on.
func noLeftovers(t *testing.T, dirs ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var found []string
		for _, dir := range dirs {
			for _, pattern := range []string{".bwrapkit-doctor-secret-*", "bwrapkit-doctor-*", ".cache/bwrapkit/selftest/bwrapkit-doctor-*"} {
				matches, _ := filepath.Glob(filepath.Join(dir, pattern))
				found = append(found, matches...)
			}
		}
		if len(found) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("left behind: %v", found)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestAcceptanceRootCleanEnvironment: the README's main job as root after `env -i`, with
// root's real home (issue 9: secrets-hidden failed here on every fresh machine).
func TestAcceptanceRootCleanEnvironment(t *testing.T) {
	requireLive(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root (the unprivileged run covers nobody)")
	}
	healthyNewcomer(t, nil, []string{"HOME=/root", newcomerPATH})
	noLeftovers(t, "/root")
}

// TestAcceptanceNobodyWithoutHome: nobody's home on Debian is /nonexistent; the doctor must
// work and must not make it.
func TestAcceptanceNobodyWithoutHome(t *testing.T) {
	requireLive(t)
	prefix, ok := asNobody()
	if !ok {
		t.Skip("needs root or nobody")
	}
	if _, err := os.Stat("/nonexistent"); err == nil {
		t.Skip("/nonexistent exists on this host")
	}
	healthyNewcomer(t, prefix, []string{"HOME=/nonexistent", newcomerPATH})
	if _, err := os.Lstat("/nonexistent"); err == nil {
		os.RemoveAll("/nonexistent")
		t.Error("the doctor made the missing home /nonexistent")
	}
}

// TestAcceptanceHomeUnset: no HOME at all (a service started with a bare environment).
func TestAcceptanceHomeUnset(t *testing.T) {
	requireLive(t)
	healthyNewcomer(t, nil, []string{newcomerPATH})
}

// TestAcceptanceReadOnlyHome: a home the caller cannot write (a read-only bind as root, mode
// 0555 otherwise) is left untouched and the doctor works from elsewhere.
func TestAcceptanceReadOnlyHome(t *testing.T) {
	requireLive(t)
	home := livetest.TempDir(t)
	var prefix []string
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("unshare"); err != nil {
			t.Skip("no unshare")
		}
		// A private mount namespace: the read-only bind is gone when the doctor exits.
		prefix = []string{"unshare", "-m", "--propagation", "private", "sh", "-c",
			`mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"`, home}
	} else {
		if err := os.Chmod(home, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(home, 0o755) })
	}
	healthyNewcomer(t, prefix, []string{"HOME=" + home, newcomerPATH})
	if entries, _ := os.ReadDir(home); len(entries) > 0 {
		t.Errorf("the read-only home holds %v", entries)
	}
}

// TestAcceptanceBadTMPDIR: TMPDIR naming nothing, or a file, with no usable home either.
func TestAcceptanceBadTMPDIR(t *testing.T) {
	requireLive(t)
	file := filepath.Join(livetest.TempDir(t), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/nonexistent"); err == nil {
		t.Skip("/nonexistent exists on this host")
	}
	for _, tmpdir := range []string{"/nonexistent/tmp", file, "relative/tmp"} {
		t.Run(tmpdir, func(t *testing.T) {
			healthyNewcomer(t, nil, []string{"HOME=/nonexistent", "TMPDIR=" + tmpdir, newcomerPATH})
			if _, err := os.Lstat("/nonexistent"); err == nil {
				os.RemoveAll("/nonexistent")
				t.Error("the doctor made the missing home /nonexistent")
			}
		})
	}
}

// TestAcceptanceInsideSandboxWithoutUserNamespaces: inside an outer bwrap with
// --disable-userns and a read-only root (no place for a self-test directory either), the
// failing checks name user namespaces, and nothing blames the self-test directory.
func TestAcceptanceInsideSandboxWithoutUserNamespaces(t *testing.T) {
	outer := livetest.SystemBwrap(t)
	prefix := []string{outer, "--unshare-user", "--disable-userns", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--"}
	home := "HOME=/root"
	if os.Geteuid() != 0 {
		home = "HOME=/nonexistent"
	}
	for _, args := range [][]string{{"doctor"}, {"doctor", "--json"}} {
		status, stdout, stderr := runNewcomer(t, prefix, []string{home, newcomerPATH}, args...)
		if status != 1 || strings.Contains(stdout+stderr, "self-test directory") {
			t.Errorf("%v: exit %d (want 1), or a self-test-directory message:\n%s\n%s", args, status, stdout, stderr)
		}
		if len(args) == 1 {
			continue
		}
		var doc doctorDoc
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		failing := 0
		for _, check := range doc.Checks {
			switch {
			case check.ID == "userns" || check.ID == "launch":
				failing++
				if check.Status != "fail" || !strings.Contains(check.Summary, "user namespace") || check.Remedy == "" {
					t.Errorf("%s: %s %q, want a failure naming user namespaces with a remedy", check.ID, check.Status, check.Summary)
				}
			case strings.HasPrefix(check.ID, "selftest."):
				if check.Status != "skip" {
					t.Errorf("%s: %s, want skip", check.ID, check.Status)
				}
			case check.ID == "bwrap.version":
				if check.Status == "fail" {
					t.Errorf("%s: %s", check.ID, check.Summary)
				}
			default:
				if check.Status != "ok" {
					t.Errorf("%s: %s %s", check.ID, check.Status, check.Summary)
				}
			}
		}
		if failing != 2 {
			t.Errorf("%d of userns and launch reported", failing)
		}
	}
}

// TestAcceptanceFullOrNoexecTMPDIR: TMPDIR on a real size-limited tmpfs that is full is
// passed over (and left clean); on a noexec one it works, since nothing runs from there. In
// a private mount namespace, so the mounts vanish with the doctor.
func TestAcceptanceFullOrNoexecTMPDIR(t *testing.T) {
	requireLive(t)
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	if _, err := os.Stat("/nonexistent"); err == nil {
		t.Skip("/nonexistent exists on this host")
	}
	for _, tc := range []struct {
		name, mount, fill string
		usedThere         bool
	}{
		{"full", "size=64k", `dd if=/dev/zero of="$0/fill" bs=4k 2>/dev/null; `, false},
		{"noexec", "noexec,size=8m", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := livetest.TempDir(t)
			prefix := []string{"unshare", "-m", "--propagation", "private", "sh", "-c",
				`mount -t tmpfs -o ` + tc.mount + ` tmpfs "$0" && ` + tc.fill + `"$@"; status=$?; ls -A "$0" >&2; exit $status`, dir}
			env := []string{"HOME=/nonexistent", "TMPDIR=" + dir, newcomerPATH}
			healthyNewcomer(t, prefix, env)
			status, stdout, stderr := runNewcomer(t, prefix, env, "doctor", "-v", "--check", "launch")
			usedThere := strings.Contains(stdout, "self-test directory: "+dir+"/bwrapkit-doctor-")
			if status != 0 || usedThere != tc.usedThere {
				t.Errorf("exit %d; self-tests in %s: %v, want %v\n%s", status, dir, usedThere, tc.usedThere, stdout)
			}
			if tc.name == "full" && !strings.Contains(stdout, "passed over: "+dir+": ") {
				t.Errorf("the full TMPDIR is not named as passed over:\n%s", stdout)
			}
			// Allowed: the filler, and the caller's own private cache directory (the probe
			// cache's last fallback, so a service account keeps a warm cache).
			for _, leftover := range strings.Fields(stderr) {
				if leftover != "fill" && leftover != "bwrapkit-"+strconv.Itoa(os.Geteuid()) {
					t.Errorf("left in the tmpfs: %q (all: %v)", leftover, strings.Fields(stderr))
				}
			}
		})
	}
}

// TestAcceptanceSweepsAKilledDoctorsLeftovers: a doctor killed with SIGKILL leaves its
// self-test directory (and maybe a planted secret); the next doctor, once they are older
// than a doctor can live, removes them, and leaves a fresh one (a doctor running now) alone.
func TestAcceptanceSweepsAKilledDoctorsLeftovers(t *testing.T) {
	requireLive(t)
	home := livetest.TempDir(t)
	base := filepath.Join(home, ".cache", "bwrapkit", "selftest")
	cmd := exec.Command(builtBinary, "doctor")
	cmd.Env = []string{"HOME=" + home, newcomerPATH}
	started := time.Now().Add(-time.Second) // a file system's timestamps may lag the clock
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var left []string
	for deadline := time.Now().Add(10 * time.Second); len(left) == 0 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		left, _ = filepath.Glob(filepath.Join(base, "bwrapkit-doctor-*"))
	}
	cmd.Process.Kill()
	// The doctor's runs are kept (TestLiveKilledDoctorLeavesNothing); should one not be, a
	// doctor killed with SIGKILL could leave a bwrap child that was between its clone and
	// its uid map; end those this test made, and only those.
	t.Cleanup(func() { killOrphanedProbes(builtBinary) })
	cmd.Wait()
	if len(left) == 0 {
		t.Fatal("the doctor never made its directory")
	}
	if _, err := os.Stat(left[0]); err != nil {
		t.Skipf("the doctor finished its cleanup before the kill: %v", err)
	}
	secret := filepath.Join(home, ".bwrapkit-doctor-secret-killed")
	if err := os.WriteFile(secret, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(base, "bwrapkit-doctor-running")
	if err := os.Mkdir(fresh, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	swept := []string{left[0], secret}
	if os.Geteuid() == 0 {
		// As root the killed doctor may already have planted its secret in /root too (the
		// self-tests plan their parts as the launch starts): it is a leftover like the others.
		planted, _ := filepath.Glob("/root/.bwrapkit-doctor-secret-*")
		for _, path := range planted {
			if info, err := os.Lstat(path); err == nil && info.ModTime().After(started) {
				swept = append(swept, path)
			}
		}
	}
	want := map[string]bool{fresh: true}
	for _, path := range swept {
		want[path] = false
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
	}
	healthyNewcomer(t, nil, []string{"HOME=" + home, newcomerPATH})
	for path, want := range want {
		if _, err := os.Lstat(path); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", path, err == nil, want)
		}
	}
}

// killOrphanedProbes ends bwrap processes orphaned (parent 1) whose command is this test
// run's own binary as the self-test probe: what a SIGKILLed doctor of this test left.
func killOrphanedProbes(binary string) {
	time.Sleep(200 * time.Millisecond) // let bwrap monitors that were mid-exit finish
	entries, _ := os.ReadDir("/proc")
	for _, entry := range entries {
		status, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "status"))
		if err != nil || !strings.Contains(string(status), "\nPPid:\t1\n") {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", entry.Name(), "cmdline"))
		if strings.Contains(string(cmdline), "\x00"+binary+"\x00__selftest-probe\x00") {
			if pid, err := strconv.Atoi(entry.Name()); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}
