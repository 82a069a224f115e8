// Package locate decides which bwrap to use and why: an explicit choice, then PATH,
// then the managed install. The search is pure over an injected PATH and file system.
package locate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bwrapkit/bwrapkit/internal/pathlist"
	"github.com/bwrapkit/bwrapkit/internal/trust"
)

// Source says where a bwrap was found.
type Source string

const (
	SourceFlag    Source = "flag"
	SourceEnv     Source = "env"
	SourcePath    Source = "path"
	SourceManaged Source = "managed"
)

// FileSystem is the host as the search sees it: Stat follows symlinks, as exec does;
// Lstat does not; Getuid is the caller, whom a binary's owner must be (or root).
type FileSystem interface {
	Stat(name string) (fs.FileInfo, error)
	Lstat(name string) (fs.FileInfo, error)
	EvalSymlinks(name string) (string, error)
	Getuid() int
}

// OS is the real host.
type OS struct{}

func (OS) Stat(name string) (fs.FileInfo, error)    { return os.Stat(name) }
func (OS) Lstat(name string) (fs.FileInfo, error)   { return os.Lstat(name) }
func (OS) EvalSymlinks(name string) (string, error) { return filepath.EvalSymlinks(name) }
func (OS) Getuid() int                              { return os.Getuid() }

// Viewer is what owners mean in this process's user namespace (see package trust).
func (OS) Viewer() trust.Viewer { return trust.Current() }

// Query is everything the search depends on.
type Query struct {
	Flag string // --bwrap
	Env  string // BWRAPKIT_BWRAP
	PATH string
	Home string // bwrapkit home; <Home>/bin/bwrap is the managed install
	// SystemHome is root's managed install, searched after Home when it is another
	// directory: one `bwrapkit install` as root serves every user. Judged like any file.
	SystemHome string
	// SystemDirs are where a bwrap found on PATH may live (see inspectOnPath); empty means
	// /usr, /bin and /sbin. Tests name their own.
	SystemDirs []string
}

// Candidate is one place a bwrap was looked for.
type Candidate struct {
	Path   string `json:"path"`
	Real   string `json:"real,omitempty"` // symlinks resolved
	Source Source `json:"source"`
	Usable bool   `json:"usable"`
	Reason string `json:"reason,omitempty"` // why it is not usable, or why it was skipped
	// Refusal is Reason's kind, for callers that branch on it (never on Reason's text).
	Refusal Refusal `json:"-"`
	// Notes are what was accepted on a judgement worth stating (an owner this user
	// namespace does not map, taken for root's).
	Notes []string    `json:"notes,omitempty"`
	Mode  fs.FileMode `json:"-"`
	UID   uint32      `json:"-"`
}

// Refusal is why a candidate is not usable.
type Refusal string

const (
	RefusalMissing       Refusal = "missing"
	RefusalSkippedEntry  Refusal = "skipped-path-entry" // empty or relative PATH entry
	RefusalNotAbsolute   Refusal = "not-absolute"
	RefusalUninspectable Refusal = "uninspectable"
	RefusalNotExecutable Refusal = "not-executable" // a directory, not a regular file, no x bit
	// RefusalReplaceable: another non-root user could replace the binary (see ReplaceableBy).
	RefusalReplaceable Refusal = "replaceable"
	// RefusalAmbiguousOwner: an owner shows as the overflow uid in a namespace that maps it,
	// so bwrapkit cannot tell the host's root from the namespace's own nobody.
	RefusalAmbiguousOwner Refusal = "ambiguous-owner"
)

// refuse marks the candidate unusable for kind, saying reason.
func (c Candidate) refuse(kind Refusal, reason string) Candidate {
	c.Refusal, c.Reason = kind, reason
	return c
}

// Result is the chosen bwrap and everything considered on the way.
type Result struct {
	Path   string `json:"path"` // absolute, symlinks resolved: what is executed
	Source Source `json:"source"`
	// Candidates lists, in search order, every place looked at, including the
	// usable ones after the chosen one (shadowed) and ignored PATH entries.
	Candidates []Candidate `json:"candidates"`
}

// Chosen returns the candidate that was picked.
func (r Result) Chosen() Candidate {
	for _, candidate := range r.Candidates {
		if candidate.Usable && candidate.Real == r.Path {
			return candidate
		}
	}
	return Candidate{}
}

// NotFoundError says no usable bwrap exists; Candidates say why each place failed.
type NotFoundError struct {
	Candidates []Candidate
}

func (e *NotFoundError) Error() string {
	message := "no usable bwrap on PATH or in the managed install"
	// A bwrap that is there but refused is the surprise worth naming; an absent one is not.
	var refused []string
	for _, candidate := range e.Candidates {
		if !candidate.Usable && candidate.Mode != 0 { // stat saw a file there
			refused = append(refused, candidate.String())
		}
	}
	if len(refused) > 0 {
		message += " (refused: " + strings.Join(refused, "; ") + ")"
	}
	return message
}

// ExplicitError says the bwrap named by --bwrap or BWRAPKIT_BWRAP cannot be used. The
// search never falls back past an explicit choice: the caller asked for that binary.
type ExplicitError struct {
	Candidate Candidate
}

func (e *ExplicitError) Error() string {
	via := "--bwrap"
	if e.Candidate.Source == SourceEnv {
		via = "BWRAPKIT_BWRAP"
	}
	return fmt.Sprintf("%s %s: %s", via, e.Candidate.Path, e.Candidate.Reason)
}

// Find searches in the order --bwrap, BWRAPKIT_BWRAP, PATH, managed install.
func Find(q Query, fsys FileSystem) (Result, error) {
	for _, explicit := range []Candidate{{Path: q.Flag, Source: SourceFlag}, {Path: q.Env, Source: SourceEnv}} {
		if explicit.Path == "" {
			continue
		}
		candidate := inspect(fsys, explicit.Path, explicit.Source)
		if !candidate.Usable {
			return Result{Candidates: []Candidate{candidate}}, &ExplicitError{Candidate: candidate}
		}
		return Result{Path: candidate.Real, Source: candidate.Source, Candidates: []Candidate{candidate}}, nil
	}

	var candidates []Candidate
	for _, entry := range pathlist.Entries(searchPATH(q.PATH)) {
		if entry.Skipped != "" {
			candidates = append(candidates, Candidate{Path: entry.Dir, Source: SourcePath}.refuse(RefusalSkippedEntry, entry.Skipped))
			continue
		}
		candidate := inspectOnPath(fsys, filepath.Join(entry.Dir, "bwrap"), q.systemDirs())
		if candidate.Refusal == RefusalMissing {
			continue // an absent file is the normal case for most PATH entries
		}
		candidates = append(candidates, candidate)
	}
	if q.Home != "" {
		candidates = append(candidates, inspect(fsys, ManagedPath(q.Home), SourceManaged))
	}
	if q.SystemHome != "" && filepath.Clean(q.SystemHome) != filepath.Clean(q.Home) {
		candidates = append(candidates, inspect(fsys, ManagedPath(q.SystemHome), SourceManaged))
	}

	for _, candidate := range candidates {
		if candidate.Usable {
			return Result{Path: candidate.Real, Source: candidate.Source, Candidates: candidates}, nil
		}
	}
	return Result{Candidates: candidates}, &NotFoundError{Candidates: candidates}
}

// DefaultPATH is searched when PATH is unset or empty (env -i, lxc-execute, a cron job's
// bare environment): what the C library's execvp searches then, /bin and /usr/bin, with
// /usr/bin first as merged-/usr systems put it.
const DefaultPATH = "/usr/bin:/bin"

func searchPATH(path string) string {
	if path == "" {
		return DefaultPATH
	}
	return path
}

// inspect decides whether path is an executable regular file, following symlinks.
func inspect(fsys FileSystem, path string, source Source) Candidate {
	candidate := Candidate{Path: path, Source: source}
	if !filepath.IsAbs(path) {
		return candidate.refuse(RefusalNotAbsolute, "not an absolute path")
	}
	info, err := fsys.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return candidate.refuse(RefusalMissing, "does not exist")
	case err != nil:
		return candidate.refuse(RefusalUninspectable, "cannot be inspected: "+err.Error())
	}
	candidate.Mode = info.Mode()
	candidate.UID, _ = idsOf(info)
	switch {
	case info.IsDir():
		return candidate.refuse(RefusalNotExecutable, "is a directory")
	case !info.Mode().IsRegular():
		return candidate.refuse(RefusalNotExecutable, "is not a regular file")
	case info.Mode().Perm()&0o111 == 0:
		return candidate.refuse(RefusalNotExecutable, "is not executable (no x bit)")
	}
	real, err := fsys.EvalSymlinks(path)
	if err != nil {
		return candidate.refuse(RefusalUninspectable, "symlinks cannot be resolved: "+err.Error())
	}
	candidate.Real = real
	// A binary another user can replace runs that user's code with the caller's rights
	// (as root, on every run): refused, like a missing one.
	exposed, notes, ambiguous, err := exposureOf(fsys, path, real)
	candidate.Notes = notes
	switch {
	case err != nil:
		return candidate.refuse(RefusalUninspectable, "its directories cannot be inspected: "+err.Error())
	case ambiguous:
		return candidate.refuse(RefusalAmbiguousOwner, "its owner cannot be told apart from another user: "+exposed)
	case exposed != "":
		return candidate.refuse(RefusalReplaceable, "another user could replace it: "+exposed+" (remove their write access or ownership, or use a bwrap only root can change)")
	}
	candidate.Usable = true
	return candidate
}

// inspectOnPath is inspect for a PATH candidate, which must also sit, as found and as
// resolved, in a system directory (/usr, /bin, /sbin: never writable in a sandbox). A
// bwrap anywhere else on PATH may sit in a project directory a sandbox writes (an
// activated venv's .venv/bin), where a command could plant one that every later run
// would execute on the host; as root even a planted file is root's, so only the place
// tells. (Ownership cannot: inside a user namespace root's files show as nobody's.) The caller's own build is still usable when named (--bwrap,
// BWRAPKIT_BWRAP) or installed (the managed home, which no workdir may enclose).
func inspectOnPath(fsys FileSystem, path string, systemDirs []string) Candidate {
	candidate := inspect(fsys, path, SourcePath)
	if !candidate.Usable {
		return candidate
	}
	if !inSystemDir(path, systemDirs) || !inSystemDir(candidate.Real, systemDirs) {
		candidate.Usable = false
		return candidate.refuse(RefusalReplaceable, "is on PATH outside /usr, /bin and /sbin, where a sandboxed command could have planted it; name your own build with --bwrap or BWRAPKIT_BWRAP, or use the managed install")
	}
	return candidate
}

func (q Query) systemDirs() []string {
	if len(q.SystemDirs) > 0 {
		return q.SystemDirs
	}
	return []string{"/usr", "/bin", "/sbin"}
}

// inSystemDir: at or under one of dirs.
func inSystemDir(path string, dirs []string) bool {
	for _, dir := range dirs {
		if path == dir || strings.HasPrefix(path, dir+"/") {
			return true
		}
	}
	return false
}

// SystemHome is root's default home, where `bwrapkit install` as root puts the bwrap
// every user's search falls back to.
const SystemHome = "/usr/local/lib/bwrapkit"

// ManagedPath is where `bwrapkit install` puts the active bwrap.
func ManagedPath(home string) string { return filepath.Join(home, "bin", "bwrap") }

// Home decides bwrapkit's home: --home, else BWRAPKIT_HOME, else a per-user default
// (root: /usr/local/lib/bwrapkit; others: ${XDG_DATA_HOME:-~/.local/share}/bwrapkit).
func Home(flag string, getenv func(string) string, uid int) string {
	return HomeIn(flag, getenv, trust.Initial(uint32(uid)))
}

// HomeIn is Home for a caller who reads owners as viewer: "root" is the root that owns the
// system's files (trust.Viewer.SystemOwner), so uid 0 of a user's `unshare -U -r`, who
// cannot write /usr/local, gets a user's home, where `bwrapkit install` can work.
func HomeIn(flag string, getenv func(string) string, viewer trust.Viewer) string {
	uid := int(viewer.UID)
	if uid == 0 && !viewer.SystemOwner() {
		uid = -1
	}
	switch {
	case flag != "":
		return flag
	case getenv("BWRAPKIT_HOME") != "":
		return getenv("BWRAPKIT_HOME")
	case uid == 0:
		return SystemHome
	case getenv("XDG_DATA_HOME") != "":
		return filepath.Join(getenv("XDG_DATA_HOME"), "bwrapkit")
	case getenv("HOME") != "":
		return filepath.Join(getenv("HOME"), ".local", "share", "bwrapkit")
	}
	return ""
}

// Remedy is the next step for a failed search, in one line.
func Remedy(err error) string {
	if OwnerAmbiguous(err) {
		// Nothing inside can change an owner it cannot map; bwrapkit install would land
		// in the same unshifted tree.
		return "this cannot be fixed from inside: on the host, give the container its own files (systemd-nspawn " +
			"--private-users-ownership=chown or =map with --private-users; container engines shift their images), " +
			"or bind in a bwrap the container's root owns and name it with --bwrap"
	}
	var explicit *ExplicitError
	errors.As(err, &explicit)
	if explicit != nil {
		return "point --bwrap or BWRAPKIT_BWRAP at an executable bwrap, or unset it to search PATH"
	}
	return "run `bwrapkit install` (or install your distribution's bubblewrap package)"
}

// OwnerAmbiguous reports whether a failed search refused a bwrap only because its owner
// cannot be told apart from another user (RefusalAmbiguousOwner): no install fixes that.
func OwnerAmbiguous(err error) bool {
	var explicit *ExplicitError
	var notFound *NotFoundError
	var candidates []Candidate
	switch {
	case errors.As(err, &explicit):
		candidates = []Candidate{explicit.Candidate}
	case errors.As(err, &notFound):
		candidates = notFound.Candidates
	}
	for _, candidate := range candidates {
		if candidate.Refusal == RefusalAmbiguousOwner {
			return true
		}
	}
	return false
}

// describe is used in messages: "dir/bwrap (is not executable)".
func (c Candidate) String() string {
	if c.Reason == "" {
		return c.Path
	}
	return strings.TrimSpace(c.Path + " (" + c.Reason + ")")
}
