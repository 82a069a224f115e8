// Package livetest finds the real bwraps that live tests run against. Live tests skip
// only when no bwrap exists; with BWRAPKIT_TEST_REQUIRE_LIVE=1 (as in CI) they fail.
package livetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// RequireEnv makes a would-be skip a failure, as restic's RESTIC_TEST_DISALLOW_SKIP.
const RequireEnv = "BWRAPKIT_TEST_REQUIRE_LIVE"

// Required reports whether live tests must not skip.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// Skip skips the test, or fails it when live tests are required.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if Required() {
		t.Fatalf("%s=1 but this live test cannot run: %s", RequireEnv, reason)
	}
	t.Skip(reason)
}

// Bwrap is one real bwrap to test against.
type Bwrap struct {
	Name string // "debian", "static-0.12.0", "codex"
	Path string
}

// Bwraps are the real bwraps on this machine: the system's (PATH) and the two static
// ones scripts/get-test-bwraps.sh puts in .cache/bwraps. The system's is always
// required; the cached ones when live tests are required.
func Bwraps(t testing.TB) []Bwrap {
	t.Helper()
	var found []Bwrap
	path, err := exec.LookPath("bwrap")
	if err != nil {
		Skip(t, "no bwrap on PATH (apt-get install bubblewrap)")
		return nil
	}
	if reason := cannotSandbox(path); reason != "" && os.Getenv(ExpectRefusalEnv) != "1" {
		Skip(t, reason)
		return nil
	}
	found = append(found, Bwrap{"debian", path})
	cache := CachedBwraps()
	for _, extra := range []Bwrap{{"static-0.12.0", "bwrap-0.12.0"}, {"codex", "bwrap-codex"}} {
		extra.Path = filepath.Join(cache, extra.Path)
		if _, err := os.Stat(extra.Path); err != nil {
			if Required() {
				t.Fatalf("%s=1 but %s is missing: run scripts/get-test-bwraps.sh", RequireEnv, extra.Path)
			}
			continue
		}
		found = append(found, extra)
	}
	return found
}

// cannotSandbox tries a real sandbox with bwrap once per process: a host whose kernel
// refuses user namespaces makes every live test meaningless, and must say so, not fail
// each test with a setup error.
func cannotSandbox(bwrap string) string {
	userns.once.Do(func() {
		cmd := exec.Command(bwrap, "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "--proc", "/proc", "--", "/bin/true")
		if out, err := cmd.CombinedOutput(); err != nil {
			userns.reason = fmt.Sprintf("%s cannot build a sandbox here (user namespaces refused?): %v: %s", bwrap, err, strings.TrimSpace(string(out)))
		}
	})
	return userns.reason
}

// ExpectRefusalEnv marks a test process that runs where sandboxes are refused on
// purpose (inside an outer bwrap with user namespaces disabled): there the probe above
// is not a reason to skip.
const ExpectRefusalEnv = "BWRAPKIT_TEST_EXPECT_REFUSAL"

var userns struct {
	once   sync.Once
	reason string
}

// SystemBwrap is the bwrap on PATH.
func SystemBwrap(t testing.TB) string {
	t.Helper()
	return Bwraps(t)[0].Path
}

// CachedBwraps is where scripts/get-test-bwraps.sh leaves the static builds, their release
// archives and the source tarball.
func CachedBwraps() string { return filepath.Join(RepoRoot(), ".cache", "bwraps") }

// RepoRoot is the module root, found from this file's location at build time.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// ScratchEnv names a directory for live tests' workdirs; make test-unprivileged sets it.
const ScratchEnv = "BWRAPKIT_TEST_SCRATCH"

// TempDir is a fresh directory for a sandbox workdir that is not under /tmp, /var/tmp
// or /run: the sandbox mounts private tmpfs there, so a workdir inside them would have
// writable (if private) parents and the "writes outside fail" tests would prove less.
func TempDir(t testing.TB) string {
	t.Helper()
	base := os.Getenv(ScratchEnv)
	if base == "" {
		base = filepath.Join(RepoRoot(), ".cache", "scratch")
	}
	if real, err := filepath.EvalSymlinks(base); err == nil {
		for _, private := range []string{"/tmp", "/var/tmp", "/run", "/dev/shm"} {
			if real == private || strings.HasPrefix(real, private+"/") {
				t.Fatalf("scratch directory %s is under %s, which the sandbox covers with a private tmpfs: its workdirs' parents would be writable inside and the outside-write tests would prove less; set %s elsewhere", base, private, ScratchEnv)
			}
		}
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatalf("scratch directory %s: %v (set %s)", base, err, ScratchEnv)
	}
	dir, err := os.MkdirTemp(base, "live-")
	if err != nil {
		t.Fatalf("scratch directory %s: %v (set %s to a writable directory outside /tmp)", base, err, ScratchEnv)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	real, _ := filepath.EvalSymlinks(dir)
	return real
}
