package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// An empty path is no place: taking "" for a directory made every --rw "inside the HOME"
// of a caller whose HOME is ephemeral (Policy.Home "").
func TestWithinNeverTakesAnEmptyPathForAPlace(t *testing.T) {
	for _, tc := range []struct {
		dir, path string
		want      bool
	}{
		{"", "/srv/data", false},
		{"", "", false},
		{"/srv", "", false},
		{"", "/", false},
		{"/", "/srv", true},
		{"/srv", "/srv", true},
		{"/srv", "/srv/data", true},
		{"/srv/", "/srv/data", true},
		{"/srv", "/srvdata", false},
		{"/srv/data", "/srv", false},
	} {
		if got := within(tc.dir, tc.path); got != tc.want {
			t.Errorf("within(%q, %q) = %v, want %v", tc.dir, tc.path, got, tc.want)
		}
	}
}

// ephemeralEnv is a service account's: no home, no cache directory.
func ephemeralEnv(t *testing.T) []string {
	return []string{"HOME=/nonexistent-" + filepath.Base(t.TempDir()), "XDG_CACHE_HOME=", "TMPDIR=" + t.TempDir()}
}

func TestReadWriteWithAnEphemeralHome(t *testing.T) {
	workdir, extra := livetest.TempDir(t), livetest.TempDir(t)
	policy, err := NewPolicy(Request{Workdir: workdir, ReadWrite: []string{extra}}, ephemeralEnv(t))
	if err != nil {
		t.Fatalf("--rw %s with an ephemeral HOME: %v", extra, err)
	}
	if !policy.EphemeralHome || len(policy.ReadWrite) != 1 {
		t.Errorf("policy: ephemeral %v, --rw %v", policy.EphemeralHome, policy.ReadWrite)
	}
	// The workdir still has its own rules.
	if _, err := NewPolicy(Request{Workdir: workdir, ReadWrite: []string{filepath.Join(workdir)}}, ephemeralEnv(t)); err == nil ||
		!strings.Contains(err.Error(), "the workdir") {
		t.Errorf("--rw at the workdir: %v", err)
	}
}

// TestLiveReadWriteWithAnEphemeralHome: for nobody (HOME=/nonexistent) and a root
// caller without a cache directory, --rw is writable inside and the write lands.
func TestLiveReadWriteWithAnEphemeralHome(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		workdir, extra := livetest.TempDir(t), livetest.TempDir(t)
		s := sandboxRun{bwrap: bwrap, request: Request{Workdir: workdir, ReadWrite: []string{extra}}, env: ephemeralEnv(t)}
		_, stdout, stderr, err := s.run(t, "write", filepath.Join(extra, "f"), filepath.Join(EphemeralHome, "f"))
		if err != nil || strings.Count(stdout, ": ok") != 2 {
			t.Fatalf("writes: %v %s %s", err, stdout, stderr)
		}
		if data, err := os.ReadFile(filepath.Join(extra, "f")); err != nil || string(data) != "written inside" {
			t.Errorf("the --rw write on the host: %q %v", data, err)
		}
		if entries, _ := os.ReadDir(workdir); len(entries) != 0 {
			t.Errorf("the workdir got %v", entries)
		}
	})
}
