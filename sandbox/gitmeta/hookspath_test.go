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
	workdir := repoWithHooksPath(t, ".husky/_")
	if err := os.MkdirAll(filepath.Join(workdir, ".husky", "_"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := WorkTreeGuarded(workdir, "", nil, nil), []string{filepath.Join(workdir, ".husky", "_")}; !slices.Equal(got, want) {
		t.Errorf("WorkTreeGuarded = %q, want %q", got, want)
	}
	// A hooks path outside the work tree is not the work tree's to guard.
	cmd := exec.Command("git", "-C", workdir, "config", "core.hooksPath", "/usr/share/hooks")
	cmd.Env = hostEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git config: %v: %s", err, out)
	}
	if got := WorkTreeGuarded(workdir, "", nil, nil); len(got) != 0 {
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
		if got := WorkTreeGuarded(workdir, home, nil, nil); len(got) != 0 {
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
		if got := WorkTreeGuarded(workdir, home, nil, nil); !slices.Equal(got, want) {
			t.Errorf("with %s naming them: %q, want %q", global, got, want)
		}
	}
}

// TestWorkTreeGuardedWhereGitLooksElsewhere: a .git git does not accept (an empty one in
// a subdirectory: git's discovery goes on to the repository above) and a .git whose
// commondir names the repository that holds the config are git's to answer, not the
// shortcut's: both find the hooks path their config names.
func TestWorkTreeGuardedWhereGitLooksElsewhere(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = hostEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	// An empty .git in a subdirectory of a repository whose config names a hooks path there.
	outer := t.TempDir()
	git(outer, "init", "-q")
	sub := filepath.Join(outer, "sub")
	if err := os.MkdirAll(filepath.Join(sub, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	hooks := filepath.Join(sub, "hooks")
	git(outer, "config", "core.hooksPath", hooks)
	if got, want := WorkTreeGuarded(sub, "", nil, nil), []string{hooks}; !slices.Equal(got, want) {
		t.Errorf("under an empty .git: %q, want %q", got, want)
	}
	// A .git whose commondir holds the config.
	store, work := t.TempDir(), t.TempDir()
	git(store, "init", "-q", "--bare", "common.git")
	common := filepath.Join(store, "common.git")
	hooks = filepath.Join(work, "hooks")
	git(common, "config", "core.hooksPath", hooks)
	dotGit := filepath.Join(work, ".git")
	for _, dir := range []string{"objects", "refs"} {
		if err := os.MkdirAll(filepath.Join(dotGit, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dotGit, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dotGit, "commondir"), []byte(common+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := WorkTreeGuarded(work, "", nil, nil), []string{hooks}; !slices.Equal(got, want) {
		t.Errorf("with a commondir: %q, want %q", got, want)
	}
}

// TestWorkTreeGuardedReadsWhatTheCallersEnvironmentNames: a config home elsewhere
// (XDG_CONFIG_HOME) and config given in the environment (GIT_CONFIG_COUNT) are read as
// the caller's own git reads them.
func TestWorkTreeGuardedReadsWhatTheCallersEnvironmentNames(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	workdir, xdg := t.TempDir(), t.TempDir()
	cmd := exec.Command("git", "-C", workdir, "init", "-q")
	cmd.Env = hostEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	if err := os.MkdirAll(filepath.Join(xdg, "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(xdg, "git", "config"), []byte("[core]\n\thooksPath = .xdg-hooks\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	environ := map[string]string{"XDG_CONFIG_HOME": xdg}
	if got, want := WorkTreeGuarded(workdir, "", ConfigEnv(func(name string) string { return environ[name] }), nil), []string{filepath.Join(workdir, ".xdg-hooks")}; !slices.Equal(got, want) {
		t.Errorf("with XDG_CONFIG_HOME: %q, want %q", got, want)
	}
	environ = map[string]string{"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "include.path", "GIT_CONFIG_VALUE_0": filepath.Join(workdir, "env.gitconfig")}
	if got, want := WorkTreeGuarded(workdir, "", ConfigEnv(func(name string) string { return environ[name] }), nil), []string{filepath.Join(workdir, "env.gitconfig")}; !slices.Equal(got, want) {
		t.Errorf("with GIT_CONFIG_COUNT: %q, want %q", got, want)
	}
}

// TestWorkTreeGuardedReadsEachSubmodulesConfig: a submodule's own config names its
// hooks path relative to its own work tree (husky set up inside the submodule), at any
// depth; and a hooks path reached through a symlink inside the work tree is guarded
// where it really is too.
func TestWorkTreeGuardedReadsEachSubmodulesConfig(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	root := t.TempDir()
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "protocol.file.allow=always", "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Env = hostEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	for _, name := range []string{"inner", "top"} {
		os.Mkdir(filepath.Join(root, name), 0o755)
		git(filepath.Join(root, name), "init", "-q")
		git(filepath.Join(root, name), "commit", "-q", "--allow-empty", "-m", name)
	}
	top := filepath.Join(root, "top")
	git(top, "submodule", "add", "-q", filepath.Join(root, "inner"), "libs/inner")
	sub := filepath.Join(top, "libs", "inner")
	git(sub, "config", "core.hooksPath", ".husky/_")
	os.MkdirAll(filepath.Join(top, "tools", "git-hooks"), 0o755)
	os.Symlink("tools/git-hooks", filepath.Join(top, ".githooks"))
	git(top, "config", "core.hooksPath", ".githooks")
	got := WorkTreeGuarded(top, "", nil, nil)
	for _, want := range []string{".githooks", "tools/git-hooks", "libs/inner/.husky/_"} {
		if !slices.Contains(got, filepath.Join(top, want)) {
			t.Errorf("WorkTreeGuarded = %q, missing %s", got, want)
		}
	}
}

// TestWorkTreeGuardedKeepsHuskysOwnHooks: husky 9's hooks directory (.husky/_, with its
// runner h) holds shims that run the user's hook one directory up (.husky/pre-commit), so
// .husky itself is guarded; a hooks directory named _ without husky's runner is not widened.
func TestWorkTreeGuardedKeepsHuskysOwnHooks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	workdir := repoWithHooksPath(t, ".husky/_")
	os.MkdirAll(filepath.Join(workdir, ".husky", "_"), 0o755)
	if got, want := WorkTreeGuarded(workdir, "", nil, nil), []string{filepath.Join(workdir, ".husky", "_")}; !slices.Equal(got, want) {
		t.Errorf("without husky's runner: WorkTreeGuarded = %q, want %q", got, want)
	}
	os.WriteFile(filepath.Join(workdir, ".husky", "_", "h"), []byte("#!/usr/bin/env sh\n"), 0o644)
	if got, want := WorkTreeGuarded(workdir, "", nil, nil), []string{filepath.Join(workdir, ".husky")}; !slices.Equal(got, want) {
		t.Errorf("with husky's runner: WorkTreeGuarded = %q, want %q", got, want)
	}
}

// repoWithHooksPath is a new repository whose config sets core.hooksPath to hooks.
func repoWithHooksPath(t *testing.T, hooks string) string {
	t.Helper()
	workdir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"config", "core.hooksPath", hooks}} {
		cmd := exec.Command("git", append([]string{"-C", workdir}, args...)...)
		cmd.Env = hostEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	return workdir
}
