package gitmeta

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bwrapkit/bwrapkit/internal/pathtree"
	"github.com/bwrapkit/bwrapkit/internal/safefile"
)

// A linked worktree's .git is a file naming its gitdir outside the workdir
// (<repo>/.git/worktrees/<name>), whose commondir is the main .git: without that bound,
// git fails inside. It is bound read-only, and only when it proves to be this
// worktree's: the gitdir's own `gitdir` file must name this workdir's .git. A gitfile a
// command planted (a workdir without .git can get one) could otherwise point at any
// repository on the host and have the next run show it.

// maxGitFile bounds the small files git keeps for a worktree.
const maxGitFile = 4096

// WorktreeCommonDir is the main .git of the linked worktree at workdir, resolved, or ""
// when workdir/.git is not a worktree's gitfile that leads back to it.
func WorktreeCommonDir(workdir string) (string, error) {
	gitfile := filepath.Join(workdir, ".git")
	info, err := os.Lstat(gitfile)
	if err != nil || !info.Mode().IsRegular() {
		return "", nil
	}
	target, err := gitfileTarget(gitfile)
	if err != nil || target == "" {
		return "", nil
	}
	gitdir, err := filepath.EvalSymlinks(target)
	if err != nil {
		return "", nil
	}
	back, err := safefile.ReadFile(filepath.Join(gitdir, "gitdir"), maxGitFile)
	if err != nil || pathtree.ResolveExisting(filepath.Clean(strings.TrimSpace(string(back)))) != gitfile {
		return "", nil // not this worktree's gitdir (a submodule's, or planted)
	}
	common, err := safefile.ReadFile(filepath.Join(gitdir, "commondir"), maxGitFile)
	if err != nil {
		return "", nil
	}
	commonDir := strings.TrimSpace(string(common))
	if !filepath.IsAbs(commonDir) {
		commonDir = filepath.Join(gitdir, commonDir)
	}
	real, err := filepath.EvalSymlinks(commonDir)
	if err != nil || !pathtree.Within(real, gitdir) || real == gitdir {
		return "", nil
	}
	return real, nil
}

// A subdirectory of a repository as the workdir has no .git of its own: git inside looks
// in the parents and finds nothing. The enclosing repository's .git is bound read-only
// when it proves to be the workdir's: its index lists a file under the workdir. A .git
// merely above the workdir (a home directory kept in git, say) is not shown: it may hold
// anything, and nothing says this project belongs to it.

// EnclosingGitDir is the .git directory of the repository the workdir is a tracked part
// of, or "". An index that cannot be read is an error, not "untracked": git may read
// what bwrapkit could not (a shared index behind a symlink), and enter the submodules
// inside the workdir that bwrapkit would then leave unprotected. indexes are the policy's
// (the enclosing repository's submodules are read from the same index next).
func EnclosingGitDir(workdir string, indexes *Indexes) (string, error) {
	if exists(filepath.Join(workdir, ".git")) {
		return "", nil
	}
	for dir := filepath.Dir(workdir); dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		gitdir := filepath.Join(dir, ".git")
		info, err := os.Lstat(gitdir)
		if err != nil {
			continue
		}
		if !info.IsDir() {
			return "", nil // a worktree or submodule further up: not followed
		}
		index := filepath.Join(gitdir, "index")
		tracked, err := indexes.tracks(index, filepath.ToSlash(strings.TrimPrefix(workdir, dir+"/"))+"/")
		switch {
		case err != nil:
			return "", fmt.Errorf("cannot read %s, the index of the repository it lies in, to tell whether it is tracked there (and which submodules to protect): %v; repair that index (git status there says how), or run from outside the repository", index, err)
		case !tracked:
			return "", nil
		}
		return gitdir, nil
	}
	return "", nil
}
