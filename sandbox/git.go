package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/bwrapkit/bwrapkit/sandbox/gitmeta"
	"github.com/bwrapkit/bwrapkit/sandbox/land"
)

// The policy's git rules are package gitmeta's; this file applies them to a Policy and
// names each refusal by the field it concerns.

// protectGit adds to the policy what a host git would follow from the workdir, with a
// commit-mode run's writable parts of .git taken out, and shows a linked worktree's or
// an enclosing repository's gitdir read-only. indexes are the policy's git indexes, each
// read once (the landing's guards read them too).
func (policy *Policy) protectGit(env []string, indexes *gitmeta.Indexes) error {
	gitProtected, err := gitmeta.Entries(policy.Workdir, indexes)
	if err != nil {
		return &PolicyError{"workdir", policy.Workdir, err.Error()}
	}
	policy.Protect = append(policy.Protect, gitProtected...)
	if policy.Git == GitCommit {
		// The repositories below the top are read-only too, where they can be (see
		// gitmeta.NestedRepositories): the command could otherwise arm one's config and
		// commit it as a submodule on a branch, which the host enters once it is merged.
		for _, nested := range gitmeta.NestedRepositories(policy.Workdir) {
			if !slices.Contains(policy.Protect, nested) {
				policy.Protect = append(policy.Protect, nested)
			}
		}
		if policy.Protect, err = gitmeta.CommitEntries(policy.Workdir, policy.Protect); err != nil {
			return &PolicyError{"git", "commit", err.Error()}
		}
	}
	if err := policy.bindWorktreeGitdir(); err != nil {
		return err
	}
	if err := policy.bindEnclosingGitdir(indexes); err != nil {
		return err
	}
	if policy.Git == GitCommit {
		// The audit after the run reads the top .git as a directory: one that is a
		// gitfile (git init --separate-git-dir; a linked worktree's is refused above,
		// naming its main worktree) would leave it nothing to read, and a nested
		// repository the command planted would stay.
		if info, err := os.Lstat(filepath.Join(policy.Workdir, ".git")); err == nil && !info.IsDir() {
			return &PolicyError{"git", "commit", "this workdir's .git is not a directory (a gitfile, as git init --separate-git-dir makes, or a link), so its repository lives elsewhere; commit mode needs the .git directory in the workdir: run with --git readonly, or from a checkout whose .git is a directory"}
		}
		policy.Env = append(policy.Env, gitmeta.IdentityEnv(env)...)
	}
	return nil
}

// bindWorktreeGitdir makes a linked worktree's main .git visible read-only.
func (policy *Policy) bindWorktreeGitdir() error {
	common, err := gitmeta.WorktreeCommonDir(policy.Workdir)
	if err != nil || common == "" {
		return err
	}
	if policy.Git == GitCommit {
		return &PolicyError{"git", "commit", fmt.Sprintf("this workdir is a linked worktree of %s, which is outside it; commit from the main worktree (--workdir %s)", common, filepath.Dir(common))}
	}
	if err := RefuseReadOnly("workdir", policy.Workdir, common); err != nil {
		return &PolicyError{"workdir", policy.Workdir, "its worktree's gitdir " + common + " cannot be shown read-only"}
	}
	if !policy.visible(common) {
		policy.ReadOnly = append(policy.ReadOnly, common)
	}
	return nil
}

// bindEnclosingGitdir makes the enclosing repository's .git visible read-only.
func (policy *Policy) bindEnclosingGitdir(indexes *gitmeta.Indexes) error {
	gitdir, err := gitmeta.EnclosingGitDir(policy.Workdir, indexes)
	if err != nil {
		return &PolicyError{"workdir", policy.Workdir, err.Error()}
	}
	if gitdir == "" {
		return nil
	}
	if policy.Git == GitCommit {
		return &PolicyError{"git", "commit", fmt.Sprintf("this workdir is a subdirectory of the repository at %s, whose .git is outside it; commit from the repository's top (--workdir %s)", filepath.Dir(gitdir), filepath.Dir(gitdir))}
	}
	if !policy.visible(gitdir) {
		policy.ReadOnly = append(policy.ReadOnly, gitdir)
	}
	// Its submodules inside the workdir are entered by a host git at the top, and its
	// hooks or config may lead into the workdir (a monorepo's .git/hooks linked to
	// tools/hooks, and the workdir tools/).
	protect, err := gitmeta.Submodules(policy.Workdir, filepath.Dir(gitdir), gitdir, policy.Protect, indexes)
	if err != nil {
		return &PolicyError{"workdir", policy.Workdir, err.Error()}
	}
	policy.Protect = protect
	// The workdir is a mount of its own inside, its parent bwrap's root: git's search
	// for .git stops at that boundary unless told to cross it.
	policy.Env = append(policy.Env, "GIT_DISCOVERY_ACROSS_FILESYSTEM=1")
	return nil
}

// makeGitCommitDirs creates the missing parts of .git a commit-mode run keeps read-only.
func makeGitCommitDirs(workdir string) error {
	if err := gitmeta.MakeCommitDirs(workdir); err != nil {
		return &PolicyError{"git", "commit", err.Error()}
	}
	return nil
}

// auditGit moves aside what a commit-mode run left that a host git would follow into a
// config the command wrote (gitmeta.Audit). In readonly mode .git is not writable.
func auditGit(policy Policy, before gitmeta.Repositories) ([]string, error) {
	if policy.Git != GitCommit {
		return nil, nil
	}
	return gitmeta.Audit(policy.Workdir, policy.Protect, before)
}

// repositoriesBefore are the repositories below a commit-mode run's workdir as it
// begins, for its audit (gitmeta.Audit); nil in the other modes, which need none.
func repositoriesBefore(policy Policy) gitmeta.Repositories {
	if policy.Git != GitCommit {
		return nil
	}
	return gitmeta.RepositoriesBelow(policy.Workdir)
}

// verifyGit checks what a commit-mode run wrote under .git before it lands
// (gitmeta.Verify); everything else under .git is refused by land's rules.
func (t *transaction) verifyGit(upper string, entries []land.Entry) {
	if t.policy.Git != GitCommit {
		return
	}
	gitmeta.Verify(t.policy.Workdir, upper, entries, t.rules().RefusesPath)
}
