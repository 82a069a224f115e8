package gitmeta

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/pathtree"
)

// WorkTreeGuarded are the paths inside the workdir that the caller's own git reads or
// runs by itself because its configuration names them there: the hooks directory
// (core.hooksPath: husky's .husky/_, lefthook's) and every config file an include.path or
// includeIf.*.path names (a project's ../.gitconfig: a core.fsmonitor written there runs
// at the next git status, as one in .git/config would). .git/hooks and .git/config are
// covered by the .git rules. The workdir may be a subdirectory of the repository: a
// relative hooks path is the repository top's (a monorepo's frontend/.husky/_), and a
// relative include is its config file's. Config is read as the caller's own git reads it
// (system, global in home, and the repository's), fsmonitor off, and without
// runHostGit's own core.hooksPath override, which would only read that back. An
// includeIf is guarded whatever its condition: guarding more only refuses more.
//
// configEnv are the caller's variables that change which config git reads (ConfigEnv):
// the caller's own git reads them, so this one does too.
func WorkTreeGuarded(workdir, home string, configEnv []string, indexes *Indexes) []string {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	top := workTreeTop(workdir)
	if top == "" {
		return nil // no work tree: git runs no hooks and reads no repository config here
	}
	dotGit := filepath.Join(top, ".git")
	guarded := guardedIn(ctx, git, workdir, top, dotGit, home, configEnv)
	// Each submodule's own config names paths in its own work tree (husky or lefthook
	// set up inside the submodule: `cd sub && git commit` runs them), at every depth.
	gitdir := dotGit
	if info, err := os.Lstat(dotGit); err == nil && !info.IsDir() {
		gitdir, _ = gitfileTarget(dotGit)
	}
	if gitdir != "" {
		_, repos, _ := walkSubmodules(workdir, top, gitdir, []string{dotGit, gitdir}, indexes)
		for _, repo := range repos {
			guarded = append(guarded, guardedIn(ctx, git, workdir, repo.top, repo.gitdir, home, configEnv)...)
		}
	}
	// A guarded name reached through a symlink inside the workdir (.githooks -> tools/hooks)
	// is guarded where it really is too: a change there is what git would run.
	for _, path := range slices.Clone(guarded) {
		if real := pathtree.ResolveExisting(path); real != path && pathtree.Within(workdir, real) && real != workdir {
			guarded = append(guarded, real)
		}
	}
	return guarded
}

// guardedIn is WorkTreeGuarded for one repository: its work tree's top and its gitdir.
func guardedIn(ctx context.Context, git, workdir, top, gitdir, home string, configEnv []string) []string {
	run := func(dir string, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, git, append([]string{"-C", dir, "-c", "core.fsmonitor=false", "-c", "safe.directory=*"}, args...)...)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "LC_ALL=C", "HOME=" + orNonexistent(home)}, configEnv...)
		return cmd.Output()
	}
	if (git == "/usr/bin/git" || git == "/bin/git") && len(configEnv) == 0 {
		if files, ok := configFiles(gitdir, home); ok && !namesAny(files) {
			return nil // no config git reads can name a hooks path or an include: nothing to guard
		}
	}
	// -z: origin NUL key NL value NUL, for every key in order; origins relative to the top.
	out, _ := run(top, "config", "--show-origin", "-z", "--get-regexp", `^(core\.hookspath|include\.path|includeif\..*\.path)$`)
	var guarded []string
	fields := strings.Split(string(out), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		origin, pair := fields[i], fields[i+1]
		key, value, _ := strings.Cut(pair, "\n")
		if value == "" {
			continue
		}
		if strings.HasPrefix(value, "~/") && home != "" {
			value = filepath.Join(home, value[2:])
		}
		if !filepath.IsAbs(value) {
			base := top // a relative hooks path is the work tree top's
			if key != "core.hookspath" {
				file, ok := strings.CutPrefix(origin, "file:")
				if !ok {
					continue // from the command line or a blob: nothing of the work tree's
				}
				if !filepath.IsAbs(file) {
					file = filepath.Join(top, file)
				}
				base = filepath.Dir(file)
			}
			value = filepath.Join(base, value)
		}
		value = filepath.Clean(value)
		if key == "core.hookspath" && huskyShims(value) {
			// husky 9: the hooks git runs (.husky/_/pre-commit) are shims that run the
			// user's own hook beside them (.husky/pre-commit), so that one runs by itself too.
			value = filepath.Dir(value)
		}
		if pathtree.Within(workdir, value) && value != workdir {
			guarded = append(guarded, value)
		}
	}
	return guarded
}

// huskyShims says whether the hooks directory is husky's: its hooks are shims, named _
// beside the user's own, sourcing husky's runner (h), which runs the hook of the same
// name one directory up.
func huskyShims(hooks string) bool {
	if filepath.Base(hooks) != "_" {
		return false
	}
	info, err := os.Lstat(filepath.Join(hooks, "h"))
	return err == nil && info.Mode().IsRegular()
}

// The shortcut. Running git costs a process start (about 4 ms of a run's wall) in every
// run inside a work tree, and in most repositories it finds nothing. Its answer can name
// something only if a config file it reads spells core.hooksPath or an include: a key's
// name is written whole in its file (git continues values across lines, never names), in
// any case. So where every file git would read here is known and readable, and none holds
// "hookspath" or "include" in any case, git is not run. The files are those of a git with
// the distributions' prefix (/usr: /etc/gitconfig), the environment WorkTreeGuarded gives
// it (HOME and no config variable: ~/.gitconfig and ~/.config/git/config), and a repository whose
// .git is a plain repository directory (plainRepository); anything else (a linked
// worktree's .git file, a .git git would not accept, a shared repository's commondir, a
// git elsewhere on PATH, a file that cannot be read) runs git as before.

// configFiles are the contents of the config files the host git reads for the repository
// whose gitdir is given (absent ones left out), or false when they cannot all be known and
// read.
func configFiles(gitdir, home string) ([][]byte, bool) {
	if !plainRepository(gitdir) {
		return nil, false
	}
	paths := []string{"/etc/gitconfig", filepath.Join(gitdir, "config"), filepath.Join(gitdir, "config.worktree")}
	if home != "" {
		paths = append(paths, filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config"))
	}
	var files [][]byte
	for _, path := range paths {
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, false
		}
		files = append(files, data)
	}
	return files, true
}

// ConfigEnv are the caller's variables (from getenv) that change which config files git
// reads or add config of their own: a config home elsewhere, other global and system
// files, and config given in the environment (GIT_CONFIG_COUNT's pairs, and what git -c
// hands its children). Each as NAME=value, for WorkTreeGuarded.
func ConfigEnv(getenv func(string) string) []string {
	var env []string
	for _, name := range []string{"XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"} {
		if value := getenv(name); value != "" {
			env = append(env, name+"="+value)
		}
	}
	count, _ := strconv.Atoi(getenv("GIT_CONFIG_COUNT"))
	for i := 0; i < count && i < maxConfigPairs; i++ {
		for _, name := range []string{"GIT_CONFIG_KEY_" + strconv.Itoa(i), "GIT_CONFIG_VALUE_" + strconv.Itoa(i)} {
			if value := getenv(name); value != "" {
				env = append(env, name+"="+value)
			}
		}
	}
	return env
}

// maxConfigPairs bounds the GIT_CONFIG_KEY_n pairs passed on: git itself takes any number,
// but an environment holds only so many, and a count past it is not a real one.
const maxConfigPairs = 1000

// plainRepository: dotGit is a directory git itself takes for a repository (HEAD, objects
// and refs, as its discovery checks) whose config is its own (no commondir: a repository
// sharing another's reads that one's config). Anything else is git's to find: a .git git
// does not accept sends its discovery on to the directories above, whose config the
// shortcut does not read.
func plainRepository(dotGit string) bool {
	if info, err := os.Lstat(dotGit); err != nil || !info.IsDir() {
		return false
	}
	if head, err := os.Lstat(filepath.Join(dotGit, "HEAD")); err != nil || !head.Mode().IsRegular() {
		return false
	}
	for _, dir := range []string{"objects", "refs"} {
		if info, err := os.Lstat(filepath.Join(dotGit, dir)); err != nil || !info.IsDir() {
			return false
		}
	}
	_, err := os.Lstat(filepath.Join(dotGit, "commondir"))
	return errors.Is(err, fs.ErrNotExist)
}

// namesAny reports whether any config file spells a hooks path or an include (pure).
func namesAny(files [][]byte) bool {
	for _, data := range files {
		lower := bytes.ToLower(data)
		if bytes.Contains(lower, []byte("hookspath")) || bytes.Contains(lower, []byte("include")) {
			return true
		}
	}
	return false
}

// workTreeTop is the nearest directory at or above workdir holding a .git, as git's
// discovery finds it (looked up here: a git run would cost as much as the config read).
func workTreeTop(workdir string) string {
	for dir := workdir; ; dir = filepath.Dir(dir) {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		if dir == filepath.Dir(dir) {
			return ""
		}
	}
}

func orNonexistent(home string) string {
	if home == "" {
		return "/nonexistent"
	}
	return home
}

// hostEnv is the environment the host's git runs in for bwrapkit: nothing of the
// caller's, no global or system config.
func hostEnv() []string {
	return []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C"}
}
