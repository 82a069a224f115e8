package land

// Kind is what an entry of the upper layer is.
type Kind int

const (
	KindFile     Kind = iota + 1
	KindDir           //
	KindSymlink       //
	KindWhiteout      // overlayfs's deletion mark: a 0/0 character device
	KindSpecial       // a device, FIFO or socket
	KindAbsent        // (for the project side) nothing at the path
)

func (k Kind) String() string {
	return map[Kind]string{KindFile: "file", KindDir: "directory", KindSymlink: "symlink", KindWhiteout: "whiteout", KindSpecial: "special file", KindAbsent: "nothing"}[k]
}

// Entry is one path the upper layer changes, with what the project holds there now.
type Entry struct {
	// Path is relative to the project, slash-separated, never "." (the root's own mode is
	// Path "" with Kind KindDir).
	Path string
	Kind Kind
	Mode uint32 // permission and set-id bits (07777)
	Gid  uint32
	// Nlink > 1: a hard link inside the layer; it lands as a file of its own.
	Nlink uint64
	Size  int64
	// Data is the file's bytes less its holes: what a copy, which keeps the holes, writes.
	Data int64
	// Target is a symlink's target.
	Target string
	// Opaque: a directory that replaces the project's (what it does not hold is deleted).
	Opaque bool
	// Metacopy: a file whose data overlayfs left in the lower layer (never expected here).
	Metacopy bool
	// Deleted: a project entry an opaque directory dropped (no upper entry of its own).
	Deleted bool
	// Lower is the project's entry at Path when the layer was walked.
	Lower Lower
	// Same: a file whose content, mode and type equal the project's (a copy-up without
	// a change), so there is nothing to land.
	Same bool
	// GitOK: under a commit-mode .git, the entry passed its content check (a loose object
	// whose content hashes to its name, a pack git verifies, an index git reads with the
	// gitlinks of HEAD, a HEAD naming refs/heads/*).
	GitOK bool
}

// Lower is the project's side of one path.
type Lower struct {
	Kind Kind
	Mode uint32
	Uid  uint32
	Gid  uint32
	// ChangedNS is the entry's ctime in nanoseconds: a time after the run began means
	// the host changed it while the command ran.
	ChangedNS int64
}

// Rule names why a change was refused; the report carries it.
type Rule string

const (
	RuleNestedGit     Rule = "git-entry"        // a .git other than the project's own
	RuleGitShape      Rule = "git-shape"        // makes a directory a repository (HEAD, objects, refs)
	RuleSymlinkGit    Rule = "symlink-git"      // a symlink that resolves through a .git
	RuleGitReadOnly   Rule = "git-readonly"     // a change under .git without --git commit
	RuleGitCommit     Rule = "git-commit"       // under .git, outside what a commit writes
	RuleSymlinkAbs    Rule = "symlink-absolute" // a symlink to an absolute path
	RuleSymlinkEscape Rule = "symlink-escapes"  // a relative symlink that leaves the project
	RuleSpecial       Rule = "special-file"     // a device, FIFO or socket
	RuleWorldWritable Rule = "world-writable"   // o+w
	RuleGroupWritable Rule = "group-writable"   // g+w for a group not the caller's
	RuleSetID         Rule = "setuid"           // setuid or setgid
	RuleProtected     Rule = "protected"        // a path host tools run by themselves
	RuleToolConfig    Rule = "tool-config"      // a package manager's settings or its own code (.npmrc, .yarnrc.yml, .yarn/releases)
	RuleConflict      Rule = "conflict"         // changed on the host during the run: the host's copy wins
	RuleMetacopy      Rule = "metacopy"         // data left in the lower layer
	RuleInsideRefused Rule = "inside-refused"   // under a refused new directory (not reported on its own)
	RuleUnchanged     Rule = ""                 // not a refusal
)
