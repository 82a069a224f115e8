package gitmeta

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestWorkTreeGuardedReadsTheRepositorysHooksPath: a husky-style core.hooksPath inside the
// work tree is found (so a transactional run never lands a change to it). Reading the key
// through a git that overrides it (runHostGit's -c core.hooksPath=/dev/null) found nothing.
func TestWorkTreeGuardedReadsTheRepositorysHooksPath(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	workdir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"config", "core.hooksPath", ".husky/_"}} {
		cmd := exec.Command("git", append([]string{"-C", workdir}, args...)...)
		cmd.Env = hostEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	if err := os.MkdirAll(filepath.Join(workdir, ".husky", "_"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := WorkTreeGuarded(workdir, ""), []string{filepath.Join(workdir, ".husky", "_")}; !slices.Equal(got, want) {
		t.Errorf("WorkTreeGuarded = %q, want %q", got, want)
	}
	// A hooks path outside the work tree is not the work tree's to guard.
	cmd := exec.Command("git", "-C", workdir, "config", "core.hooksPath", "/usr/share/hooks")
	cmd.Env = hostEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git config: %v: %s", err, out)
	}
	if got := WorkTreeGuarded(workdir, ""); len(got) != 0 {
		t.Errorf("WorkTreeGuarded with an outside hooks path = %q, want none", got)
	}
}
