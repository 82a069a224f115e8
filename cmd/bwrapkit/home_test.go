package main

import (
	"encoding/json"
	"fmt"
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

func TestParseAge(t *testing.T) {
	for text, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "36h": 36 * time.Hour, "1d": 24 * time.Hour} {
		if got, err := parseAge(text); err != nil || got != want {
			t.Errorf("parseAge(%q) = %v, %v", text, got, err)
		}
	}
	for _, bad := range []string{"", "0d", "-1d", "xd", "-5h", "soon"} {
		if _, err := parseAge(bad); err == nil {
			t.Errorf("parseAge(%q) accepted", bad)
		}
	}
}

type homesListing struct {
	TotalBytes int64 `json:"total_bytes"`
	Homes      []struct {
		Path    string
		Project string
		Size    int64 `json:"size_bytes"`
		InUse   bool  `json:"in_use"`
	}
}

// TestE2EHomeLsAndPrune: two projects' runs leave two HOMEs that ls names with their
// projects and sizes; prune --all, while a run holds one of them, removes exactly the
// other (the HOME's read-only module-cache-like tree included), keeps the held one,
// and leaves a victim behind a link, and a link planted in the HOMEs' root, untouched.
func TestE2EHomeLsAndPrune(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	environ, cache := attackEnv(t, bwrap)
	victim := livetest.TempDir(t)
	os.WriteFile(filepath.Join(victim, "keep"), []byte("precious"), 0o644)
	projects := []string{livetest.TempDir(t), livetest.TempDir(t)}
	fill := `cd && mkdir -p go/pkg/mod/x@v1 && head -c 200000 /dev/zero > go/pkg/mod/x@v1/big && chmod -R a-w go && ln -s ` + victim + ` victim`
	for _, project := range projects {
		if got := binaryRun(t, environ, "run", "--workdir", project, "--", "sh", "-c", fill); got.status != 0 {
			t.Fatalf("filling the HOME: %d %s", got.status, got.stderr)
		}
	}
	root := filepath.Join(cache, "bwrapkit", "home")
	planted := filepath.Join(root, "planted-0123456789abcdef")
	os.Symlink(victim, planted)

	var listing homesListing
	got := binaryRun(t, environ, "home", "ls", "--json")
	if err := json.Unmarshal([]byte(got.stdout), &listing); err != nil || len(listing.Homes) != 2 {
		t.Fatalf("home ls --json: %v %s %s", err, got.stdout, got.stderr)
	}
	var listedProjects []string
	for _, entry := range listing.Homes {
		listedProjects = append(listedProjects, entry.Project)
		if entry.Size < 200000 || filepath.Dir(entry.Path) != root {
			t.Errorf("listed %+v: want at least 200000 bytes, in %s", entry, root)
		}
	}
	if !slices.Contains(listedProjects, projects[0]) || !slices.Contains(listedProjects, projects[1]) || listing.TotalBytes < 400000 {
		t.Errorf("home ls: projects %v (want %v), total %d", listedProjects, projects, listing.TotalBytes)
	}

	// The doctor reports the same total.
	got = binaryRun(t, environ, "doctor", "--json", "--check", "homes")
	var doctor doctorDoc
	json.Unmarshal([]byte(got.stdout), &doctor)
	if len(doctor.Checks) != 1 || !strings.Contains(doctor.Checks[0].Detail, fmt.Sprintf("total_bytes: %d;", listing.TotalBytes)) {
		t.Errorf("doctor --check homes: %s, want total_bytes %d", got.stdout, listing.TotalBytes)
	}

	// A run holds the second project's HOME while prune --all runs.
	marker := fmt.Sprintf("1002.%d", time.Now().UnixNano()%1000000007)
	held := exec.Command(builtBinary, "run", "--workdir", projects[1], "--", "sleep", marker)
	held.Env = environ
	if err := held.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Process.Signal(syscall.SIGTERM); held.Wait() })
	for deadline := time.Now().Add(10 * time.Second); len(sleepers(marker)) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the holding run never started")
		}
	}
	got = binaryRun(t, environ, "home", "prune", "--all", "--json")
	var pruned struct {
		Removed []struct{ Path, Project string }
		Kept    []struct{ Path, Reason string }
	}
	if err := json.Unmarshal([]byte(got.stdout), &pruned); err != nil || got.status != 0 {
		t.Fatalf("home prune --all: %d %v %s %s", got.status, err, got.stdout, got.stderr)
	}
	if len(pruned.Removed) != 1 || pruned.Removed[0].Project != projects[0] || len(pruned.Kept) != 1 || pruned.Kept[0].Reason != "in use by a run" {
		t.Errorf("prune while one HOME is held: %+v", pruned)
	}
	for _, removed := range pruned.Removed {
		if _, err := os.Lstat(removed.Path); !os.IsNotExist(err) {
			t.Errorf("prune said it removed %s, which is still there (%v)", removed.Path, err)
		}
	}
	for _, kept := range pruned.Kept {
		if _, err := os.Stat(filepath.Join(kept.Path, "go", "pkg", "mod", "x@v1", "big")); err != nil {
			t.Errorf("the held HOME lost its files: %v", err)
		}
	}
	if data, err := os.ReadFile(filepath.Join(victim, "keep")); err != nil || string(data) != "precious" {
		t.Errorf("the victim behind a link changed: %q %v", data, err)
	}
	if _, err := os.Lstat(planted); err != nil {
		t.Errorf("a link planted in the HOMEs' root was removed: %v", err)
	}
	// What ls lists now is exactly what prune left.
	got = binaryRun(t, environ, "home", "ls", "--json")
	listing = homesListing{}
	json.Unmarshal([]byte(got.stdout), &listing)
	if len(listing.Homes) != 1 || listing.Homes[0].Project != projects[1] || !listing.Homes[0].InUse {
		t.Errorf("home ls after the prune: %s", got.stdout)
	}
	if got := binaryRun(t, environ, "home", "prune"); got.status != exitUsage {
		t.Errorf("prune with no criterion: %d %q, want 2", got.status, got.stderr)
	}
}
