// Package gitmeta owns a project's git metadata as a sandbox sees it: which entries a
// host git would follow from the workdir (the top .git, a gitfile's gitdir, every
// submodule's), which parts of .git a commit-mode run may write, the linked worktree's
// or enclosing repository's gitdir to show read-only, the identity a commit is made
// with, and, after a run, what it left (Audit) or wrote (Verify) that a host git must
// not meet. It reads the git index itself (versions 2 to 4) and otherwise runs the
// host's git with a clean environment, hooks and fsmonitor off.
//
// Its refusals are plain errors naming the cause and the fix; package sandbox turns
// them into its PolicyError for the field they concern. The mode itself (GitMode) is a
// field of sandbox's Policy and stays there, with the rest of the policy's vocabulary.
package gitmeta
