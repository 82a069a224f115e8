package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// TestCommitModeProtectsNestedRepositories: in commit mode every repository below the top
// is read-only for the run, not only the submodules: the command could otherwise arm an
// existing nested repository's config and commit it as a submodule on a branch, which the
// host enters once the branch is merged (and the audit after the run takes every other
// .git for the run's own).
func TestCommitModeProtectsNestedRepositories(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	workdir := livetest.TempDir(t)
	for _, dir := range []string{workdir, filepath.Join(workdir, "vendor", "x")} {
		os.MkdirAll(dir, 0o755)
		cmd := exec.Command(gitPath, "init", "-q", dir)
		cmd.Env = []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
	}
	// A nested .git that is a symlink is left to the audit's inventory: bound, it refused
	// every commit-mode run ("became a symlink after it was checked").
	os.MkdirAll(filepath.Join(workdir, "linked"), 0o755)
	os.Symlink("../vendor/x/.git", filepath.Join(workdir, "linked", ".git"))
	nested := filepath.Join(workdir, "vendor", "x", ".git")
	for git, want := range map[string]bool{"commit": true, "readonly": false} {
		policy, err := NewPolicy(Request{Workdir: workdir, Git: git, WorkdirMode: string(WorkdirDirect)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(policy.Protect, nested); got != want {
			t.Errorf("--git %s protects %s: %v, want %v", git, nested, got, want)
		}
	}
}

// TestCommitModeRefusesAGitfileTop: a workdir whose .git is a gitfile (git init
// --separate-git-dir) has its repository elsewhere; the audit after a commit-mode run reads
// the top .git as a directory, so commit mode is refused there, with what to do.
func TestCommitModeRefusesAGitfileTop(t *testing.T) {
	workdir, gitdir := livetest.TempDir(t), livetest.TempDir(t)
	os.WriteFile(filepath.Join(workdir, ".git"), []byte("gitdir: "+gitdir+"\n"), 0o644)
	_, err := NewPolicy(Request{Workdir: workdir, Git: "commit", WorkdirMode: string(WorkdirDirect)}, nil)
	if err == nil || !strings.Contains(err.Error(), "not a directory") || !strings.Contains(err.Error(), "--git readonly") {
		t.Fatalf("commit mode with a gitfile top: %v", err)
	}
}
