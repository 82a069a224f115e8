package sandbox

// GitMode is how the workdir's git metadata is bound.
type GitMode string

const (
	// GitReadOnly binds every gitdir read-only: the command reads history, never writes it.
	GitReadOnly GitMode = "readonly"
	// GitCommit lets the command commit: objects, refs, the index and logs writable;
	// hooks, config and info stay read-only (see package gitmeta).
	GitCommit GitMode = "commit"
)

// ParseGitMode reads --git; empty is the default, readonly.
func ParseGitMode(value string) (GitMode, error) {
	switch GitMode(value) {
	case "", GitReadOnly:
		return GitReadOnly, nil
	case GitCommit:
		return GitCommit, nil
	}
	return "", &PolicyError{"git", value, "must be readonly (the default) or commit"}
}
