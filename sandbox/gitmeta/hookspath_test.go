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

func TestNamesAnySeesEverySpelling(t *testing.T) {
	cases := []struct {
		config string
		names  bool
	}{
		{"[core]\n\trepositoryformatversion = 0\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.org/x.git\n", false},
		{"[core]\n\thooksPath = .husky/_\n", true},
		{"[CORE]\n\tHOOKSPATH=.githooks\n", true},
		{"[core \"x\"]\nHooksPath = a\n", true},
		{"[include]\n\tpath = ../.gitconfig\n", true},
		{"[includeIf \"gitdir:~/work/\"]\n\tpath = .gitconfig.work\n", true},
		{"[Include]\npath=x\n", true},
		{"", false},
	}
	for _, c := range cases {
		if got := namesAny([][]byte{[]byte(c.config)}); got != c.names {
			t.Errorf("namesAny(%q) = %v, want %v", c.config, got, c.names)
		}
	}
}

// TestWorkTreeGuardedReadsTheCallersConfig: a hooks path and an include named only in the
// caller's global config (~/.gitconfig, ~/.config/git/config) are found too: the files
// the shortcut reads before deciding that git need not run are the ones git reads.
func TestWorkTreeGuardedReadsTheCallersConfig(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	for _, global := range []string{".gitconfig", filepath.Join(".config", "git", "config")} {
		workdir, home := t.TempDir(), t.TempDir()
		cmd := exec.Command("git", "-C", workdir, "init", "-q")
		cmd.Env = hostEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git init: %v: %s", err, out)
		}
		if got := WorkTreeGuarded(workdir, home); len(got) != 0 {
			t.Errorf("a repository with no hooks path or include anywhere: %q, want none", got)
		}
		path := filepath.Join(home, global)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("[core]\n\thooksPath = .githooks\n[includeIf \"gitdir:/\"]\n\tpath = "+filepath.Join(workdir, "team.gitconfig")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		want := []string{filepath.Join(workdir, ".githooks"), filepath.Join(workdir, "team.gitconfig")}
		if got := WorkTreeGuarded(workdir, home); !slices.Equal(got, want) {
			t.Errorf("with %s naming them: %q, want %q", global, got, want)
		}
	}
}
