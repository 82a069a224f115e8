package gitmeta

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/bwrapkit/bwrapkit/internal/pathtree"
	"github.com/bwrapkit/bwrapkit/internal/safefile"
)

// A gitdir's own files can be symlinks into the work tree: `ln -s ../../scripts/pre-commit
// .git/hooks/pre-commit`, a hooks directory or a config kept with the project's sources,
// a commondir file naming a directory there. Protecting the gitdir then protects only
// the links: the command writes the file they lead to, and the host's next git runs it
// (a hook at the next commit, a core.fsmonitor at the next status). So each file a host
// git reads or runs by itself from a gitdir is followed, and where it lands inside the
// workdir, outside what is protected already, the file it lands on is protected too.
// A way there the command could change (a symlink inside the workdir on the way, or a
// missing file it could create) is refused.

// gitdirReads are the files of a gitdir a host git reads or runs by itself: its config
// (core.fsmonitor, core.sshCommand, a filter's command), the hooks directory and,
// separately, each hook in it.
var gitdirReads = []string{"config", "config.worktree", "hooks"}

// maxHops is how many symlinks a path may pass through, the kernel's own bound.
const maxHops = 40

// LinkedInto lists what a host git would read or run from gitdir that lies inside
// workdir, outside protected, as resolved paths to protect read-only: the gitdir itself
// when it is there (a gitfile's or a link's way in: every file of it counts, a commondir
// the command could add included), and what its config and hooks lead to by symlinks;
// then the same for the common directory its commondir file names, and so on. gitdir
// itself may be anywhere: a linked worktree's main .git or an enclosing repository's,
// outside the workdir, can link into it too.
func LinkedInto(workdir, gitdir string, protected []string) ([]string, error) {
	var found []string
	covered := func(path string) bool {
		return !pathtree.Within(workdir, path) || withinAny(path, protected) || withinAny(path, found)
	}
	seen := map[string]bool{}
	for dir := gitdir; dir != "" && !seen[dir]; {
		seen[dir] = true
		names := []string{"."}
		names = append(names, gitdirReads...)
		if hooks, err := os.ReadDir(filepath.Join(dir, "hooks")); err == nil {
			for _, hook := range hooks {
				if !strings.HasSuffix(hook.Name(), ".sample") {
					names = append(names, "hooks/"+hook.Name())
				}
			}
		}
		for _, name := range names {
			path := filepath.Join(dir, filepath.FromSlash(name))
			if err := singleName(path); err != nil {
				return nil, err
			}
			target, err := landing(workdir, path, covered)
			if err != nil {
				return nil, err
			}
			if target != "" {
				found = append(found, target)
			}
		}
		// The common directory holds the config and hooks git uses for this gitdir. Git
		// joins a relative commondir to where the gitdir really is, not to the way there.
		if real, _, err := follow(dir); err == nil {
			dir = real
		}
		common, err := commonDir(dir)
		if err != nil {
			return nil, err
		}
		dir = common
	}
	return found, nil
}

// singleName refuses a gitdir's file that is a regular file with a second name: a hard
// link, which the read-only bind of the gitdir does not cover, lets a command change it
// through a name in the workdir (`ln scripts/pre-commit .git/hooks/pre-commit`). Where
// the other name is cannot be told cheaply, so any second name is refused.
func singleName(path string) error {
	info, err := os.Lstat(path)
	if err != nil || !info.Mode().IsRegular() {
		return nil
	}
	if stat, ok := info.Sys().(*syscall.Stat_t); ok && stat.Nlink > 1 {
		return fmt.Errorf("%s has %d hard links; a command could change it through another name, and a later host git would read or run it; replace it with a copy of its own (cp %s %s.new && mv %s.new %s)", path, stat.Nlink, path, path, path, path)
	}
	return nil
}

// landing follows path and returns the file it lands on when that is inside workdir and
// not covered, "" when there is nothing to protect (no link, or it leads elsewhere). It
// refuses a way the command could change.
func landing(workdir, path string, covered func(string) bool) (string, error) {
	real, links, err := follow(path)
	for _, link := range links {
		if link != path && !covered(link) {
			return "", fmt.Errorf("%s is reached through %s, a symlink inside the workdir that a command could retarget, and a later host git would follow it; make the links lead straight to the file", path, link)
		}
	}
	var missing *missingError
	switch {
	case errors.As(err, &missing):
		if !covered(missing.path) {
			return "", fmt.Errorf("%s leads to %s inside the workdir, which does not exist: a command could create it, and a later host git would read or run it; create it or remove the link", path, missing.path)
		}
		return "", nil
	case err != nil:
		return "", fmt.Errorf("cannot follow %s: %v", path, err)
	case real == workdir:
		return "", fmt.Errorf("%s leads to the workdir itself, so a later host git would read or run what a command writes there; run with the repository's top, or another directory, as the workdir", path)
	case covered(real):
		return "", nil // outside the workdir, or protected already
	}
	if err := singleName(real); err != nil {
		return "", err
	}
	return real, nil
}

// missingError is a path that does not exist at the end of a chain of links.
type missingError struct{ path string }

func (e *missingError) Error() string { return e.path + " does not exist" }

// follow resolves path as the kernel does, component by component, and returns the real
// path and every symlink it went through (their own paths, in order). A missing
// component is a *missingError naming the path that was looked for.
func follow(path string) (string, []string, error) {
	if !filepath.IsAbs(path) {
		return "", nil, fmt.Errorf("%s is not absolute", path)
	}
	var links []string
	resolved := "/"
	pending := strings.Split(path, "/")
	for len(pending) > 0 {
		part := pending[0]
		pending = pending[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, part)
		info, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return "", links, &missingError{filepath.Join(append([]string{next}, pending...)...)}
		}
		if err != nil {
			return "", links, err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if links = append(links, next); len(links) > maxHops {
			return "", links, fmt.Errorf("more than %d symlinks on the way", maxHops)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", links, err
		}
		if filepath.IsAbs(target) {
			resolved = "/"
		}
		pending = append(strings.Split(target, "/"), pending...)
	}
	return resolved, links, nil
}

// commonDir is the directory gitdir's commondir file names, clean and absolute, or ""
// when it has none.
func commonDir(gitdir string) (string, error) {
	data, err := safefile.ReadFile(filepath.Join(gitdir, "commondir"), maxGitFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("cannot read %s/commondir: %v", gitdir, err)
	}
	common := strings.TrimSpace(string(data))
	if common == "" {
		return "", nil
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(gitdir, common)
	}
	return filepath.Clean(common), nil
}

// withinAny says whether path is one of roots or under one.
func withinAny(path string, roots []string) bool {
	for _, root := range roots {
		if pathtree.Within(root, path) {
			return true
		}
	}
	return false
}
