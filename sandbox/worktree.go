package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

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

// worktreeCommonDir is the main .git of the linked worktree at workdir, resolved, or ""
// when workdir/.git is not a worktree's gitfile that leads back to it.
func worktreeCommonDir(workdir string) (string, error) {
	gitfile := filepath.Join(workdir, ".git")
	info, err := os.Lstat(gitfile)
	if err != nil || !info.Mode().IsRegular() {
		return "", nil
	}
	data, err := safefile.ReadFile(gitfile, maxGitFile)
	if err != nil {
		return "", nil
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !ok {
		return "", nil
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(workdir, target)
	}
	gitdir, err := filepath.EvalSymlinks(target)
	if err != nil {
		return "", nil
	}
	back, err := safefile.ReadFile(filepath.Join(gitdir, "gitdir"), maxGitFile)
	if err != nil || resolveExisting(filepath.Clean(strings.TrimSpace(string(back)))) != gitfile {
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
	if err != nil || !within(real, gitdir) || real == gitdir {
		return "", nil
	}
	return real, nil
}

// bindWorktreeGitdir makes a linked worktree's main .git visible read-only.
func (policy *Policy) bindWorktreeGitdir() error {
	common, err := worktreeCommonDir(policy.Workdir)
	if err != nil || common == "" {
		return err
	}
	if policy.Git == GitCommit {
		return &PolicyError{"--git", "commit", fmt.Sprintf("this workdir is a linked worktree of %s, which is outside it; commit from the main worktree (--workdir %s)", common, filepath.Dir(common))}
	}
	if err := RefuseReadOnly("--workdir", policy.Workdir, common); err != nil {
		return &PolicyError{"--workdir", policy.Workdir, "its worktree's gitdir " + common + " cannot be shown read-only"}
	}
	if !policy.visible(common) {
		policy.ReadOnly = append(policy.ReadOnly, common)
	}
	return nil
}
