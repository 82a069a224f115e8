package land

import (
	"path"
	"slices"
	"strings"
)

// Rules are what decides a change, besides the change itself.
type Rules struct {
	// GitCommit: --git commit, so the project's .git may take what a commit writes.
	GitCommit bool
	// Guarded are project paths (relative, slash-separated) no change may touch or
	// replace: the policy file in use, bwrapkit's own binary, the hooks directory git is
	// configured to use inside the work tree, each --protect path.
	Guarded []string
	// CallerGid is the caller's own group: group-writable is fine for it alone.
	CallerGid uint32
	// StartedNS is when the run began (ns since the epoch): a project entry changed
	// later is a conflict.
	StartedNS int64
	// LowerHas says whether the project already holds dir/name (relative,
	// slash-separated): what a directory holds after landing decides whether it has the
	// shape of a git directory (see gitshape.go). Nil: nothing.
	LowerHas func(dir, name string) bool
	// CurrentBranch is the ref the host's HEAD names ("refs/heads/main"), which a
	// --git commit run may not delete; "" for none or a detached HEAD.
	CurrentBranch string
	// Packed says whether the packed-refs the run wrote names ref ("refs/heads/x"): git's
	// gc moved it there, and packed-refs never lands. Nil: the run wrote none.
	Packed func(ref string) bool
}

// Action is what happens to one entry.
type Action int

const (
	Apply  Action = iota + 1 // land it
	Skip                     // nothing to land (unchanged)
	Refuse                   // keep it out, in the quarantine
)

// Decision is the verdict on one entry. Whole: a new directory every entry under which
// is applied too, so it may land in one rename.
type Decision struct {
	Entry  Entry
	Action Action
	Rule   Rule
	Whole  bool
}

// Decide rules on every entry of a walk (parents before children, as Walk gives them).
// An entry under a refused new directory is refused with it (RuleInsideRefused, not
// reported apart): it has nowhere to land.
func Decide(entries []Entry, rules Rules) []Decision {
	decisions := make([]Decision, 0, len(entries))
	for _, entry := range entries {
		decisions = append(decisions, decideOne(entry, rules))
	}
	refuseGitShapes(decisions, rules.LowerHas)
	keepBranches(decisions, rules.CurrentBranch, rules.Packed)
	refuseInside(decisions)
	markWhole(decisions)
	return decisions
}

// keepBranches refuses the deletion of a branch that would lose it: the branch the host
// has checked out, and one the run's packed-refs names (git gc --auto, or pack-refs, moved
// the loose ref there; packed-refs itself is refused, so the branch would be left nowhere:
// a big commit's gc emptied the user's main). git branch -D rewrites packed-refs without
// the branch, and lands.
func keepBranches(decisions []Decision, current string, packed func(string) bool) {
	for i, decision := range decisions {
		entry := decision.Entry
		gone := entry.Kind == KindWhiteout || entry.Deleted
		ref, isBranch := strings.CutPrefix(entry.Path, ".git/")
		if decision.Action != Apply || !gone || !isBranch || !strings.HasPrefix(ref, "refs/heads/") {
			continue
		}
		if ref == current || packed != nil && packed(ref) {
			decisions[i].Action, decisions[i].Rule = Refuse, RuleGitCommit
		}
	}
}

// refuseInside refuses what lies under a refused new directory: it has nowhere to land.
// It runs after every rule, the git shape's included (judged per directory over all of
// its entries, after the walk), and what it refuses is not reported on its own.
func refuseInside(decisions []Decision) {
	var refused subtree
	for i, decision := range decisions {
		entry := decision.Entry
		if refused.holds(entry.Path) {
			decisions[i].Action, decisions[i].Rule = Refuse, RuleInsideRefused
			continue
		}
		if decision.Action == Refuse && entry.Kind == KindDir && entry.Lower.Kind != KindDir && entry.Path != "" {
			refused = subtree{entry.Path}
		}
	}
}

// subtree is the last directory a pass over the decisions marked (refused, or moving
// whole), and tells the entries below it. The walk lists a directory's entries right
// after it (depth first), and an entry inside a marked directory is never marked itself,
// so only the last marked directory can hold the entries that follow: one comparison an
// entry. A list of every marked directory, searched for each entry, took 47 s for
// 120,000 entries (60,000 refused directories): minutes of the landing lock, which
// holds every other landing of the caller.
type subtree struct{ dir string }

// holds reports whether p lies strictly below the marked directory.
func (s subtree) holds(p string) bool {
	return s.dir != "" && p != s.dir && within(s.dir, p)
}

func decideOne(entry Entry, rules Rules) Decision {
	refuse := func(rule Rule) Decision { return Decision{Entry: entry, Action: Refuse, Rule: rule} }
	names := strings.Split(entry.Path, "/")
	for i, name := range names {
		if name == ".git" && (i > 0 || entry.Lower.Kind == KindAbsent && len(names) == 1 && !entry.Deleted && entry.Kind != KindWhiteout) {
			return refuse(RuleNestedGit)
		}
	}
	if names[0] == ".git" {
		switch {
		case !rules.GitCommit:
			return refuse(RuleGitReadOnly)
		case len(names) == 1:
			// .git itself: only its own copy-up (a child changed), never a new mode or kind.
			if entry.Kind != KindDir || entry.Lower.Kind != KindDir || entry.Opaque || entry.Mode != entry.Lower.Mode {
				return refuse(RuleGitCommit)
			}
		case !commitWrites(names[1:], entry):
			return refuse(RuleGitCommit)
		}
	}
	for _, guarded := range rules.Guarded {
		if within(guarded, entry.Path) {
			return refuse(RuleProtected)
		}
		// Deleting or replacing a parent of a guarded path replaces the guarded path too.
		replaces := entry.Kind != KindDir || entry.Opaque || entry.Lower.Kind != KindDir || entry.Deleted
		if replaces && within(entry.Path, guarded) {
			return refuse(RuleProtected)
		}
	}
	if inRepository(names, rules.LowerHas) {
		return refuse(RuleGitShape)
	}
	if runsPrograms(names) && !entry.Deleted && entry.Kind != KindWhiteout {
		return refuse(RuleToolConfig)
	}
	switch entry.Kind {
	case KindSpecial:
		return refuse(RuleSpecial)
	case KindSymlink:
		if path.IsAbs(entry.Target) {
			return refuse(RuleSymlinkAbs)
		}
		if escapes(entry.Path, entry.Target) {
			return refuse(RuleSymlinkEscape)
		}
		if throughGit(entry.Path, entry.Target) {
			return refuse(RuleSymlinkGit)
		}
	case KindFile:
		if entry.Metacopy {
			return refuse(RuleMetacopy)
		}
	}
	if entry.Kind == KindFile || entry.Kind == KindDir {
		switch {
		case entry.Mode&0o6000 != 0:
			return refuse(RuleSetID)
		case entry.Mode&0o002 != 0:
			return refuse(RuleWorldWritable)
		case entry.Mode&0o020 != 0 && entry.Gid != rules.CallerGid:
			return refuse(RuleGroupWritable)
		}
	}
	// The host's copy wins over one it changed while the command ran. A directory's
	// ctime moves with every entry made in it, so only what replaces it is judged.
	conflictable := entry.Kind != KindDir || entry.Lower.Kind != KindDir || entry.Deleted
	if conflictable && entry.Lower.Kind != KindAbsent && entry.Lower.ChangedNS >= rules.StartedNS {
		return refuse(RuleConflict)
	}
	if entry.Same || (entry.Kind == KindDir && entry.Lower.Kind == KindDir && !entry.Opaque && entry.Mode == entry.Lower.Mode) {
		return Decision{Entry: entry, Action: Skip}
	}
	if (entry.Kind == KindWhiteout || entry.Deleted) && entry.Lower.Kind == KindAbsent {
		return Decision{Entry: entry, Action: Skip} // deleted what the host no longer has
	}
	return Decision{Entry: entry, Action: Apply}
}

// commitWrites is the write set of a commit under .git (rest: the path below .git):
// loose objects and packs that verified (GitOK), refs/heads/*, logs/, the index (when
// it verified), HEAD as a symbolic ref to refs/heads/* (verified), COMMIT_EDITMSG,
// ORIG_HEAD, and the directories that hold them. Lock files never outlive a clean
// commit, so one left behind is refused with the rest.
func commitWrites(rest []string, entry Entry) bool {
	if entry.Kind == KindWhiteout || entry.Deleted {
		// A commit deletes nothing but its own lock files and packed garbage; refs may go.
		return rest[0] == "refs" && len(rest) > 2 && rest[1] == "heads" || rest[0] == "logs"
	}
	if entry.Kind == KindDir {
		if entry.Opaque || entry.Lower.Kind != KindAbsent && entry.Mode != entry.Lower.Mode {
			return false
		}
		switch rest[0] {
		case "objects":
			return len(rest) == 1 || len(rest) == 2 && (isHex(rest[1], 2) || rest[1] == "pack")
		case "refs":
			return len(rest) == 1 || rest[1] == "heads"
		case "logs":
			return true
		}
		return false
	}
	if entry.Kind != KindFile {
		return false
	}
	switch {
	case len(rest) == 1:
		switch rest[0] {
		case "COMMIT_EDITMSG":
			return true
		case "index", "HEAD", "ORIG_HEAD":
			return entry.GitOK // the host's git read it, as gitmeta.Verify requires
		}
	case rest[0] == "objects":
		return entry.GitOK // its content matched its name, or git verified the pack
	case rest[0] == "refs":
		// A branch tip gitmeta.Verify found to keep the guarded paths as the host's HEAD.
		return len(rest) > 2 && rest[1] == "heads" && !strings.HasSuffix(entry.Path, ".lock") && entry.GitOK
	case rest[0] == "logs":
		// A reflog whose commits gitmeta.Verify checked as it checks a branch's.
		return !strings.HasSuffix(entry.Path, ".lock") && entry.GitOK
	}
	return false
}

// markWhole finds new directories that can land in one rename: every entry under them
// applied, none a hard link (which must land as a copy of its own).
func markWhole(decisions []Decision) {
	for i := range decisions {
		entry := decisions[i].Entry
		if decisions[i].Action != Apply || entry.Kind != KindDir || entry.Lower.Kind != KindAbsent || entry.Path == "" {
			continue
		}
		whole := true
		for _, later := range decisions[i+1:] {
			if !within(entry.Path, later.Entry.Path) {
				break
			}
			if later.Action != Apply || later.Entry.Nlink > 1 && later.Entry.Kind == KindFile {
				whole = false
				break
			}
		}
		decisions[i].Whole = whole
	}
}

// escapes reports whether a relative symlink at linkPath leaves the project. A ".."
// after a name is refused too: the name may itself be a link elsewhere, and the kernel
// resolves it before the "..".
func escapes(linkPath, target string) bool {
	depth := strings.Count(linkPath, "/") // the link's own directory's depth
	seenName := false
	for _, part := range strings.Split(target, "/") {
		switch part {
		case "", ".":
		case "..":
			if seenName {
				return true
			}
			depth--
			if depth < 0 {
				return true
			}
		default:
			seenName = true
		}
	}
	return false
}

// within reports whether p is dir or lies under it ("" is the project root).
func within(dir, p string) bool {
	// No dir+"/": this runs for every entry of a landing, and a concatenation allocates.
	return dir == "" || p == dir || len(p) > len(dir) && p[len(dir)] == '/' && strings.HasPrefix(p, dir)
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// Package managers read these on every command, in whatever directory of the project
// they run, and can be told there to run programs: npm's script-shell and node-options
// (.npmrc), yarn's yarn-path and yarnPath (.yarnrc, .yarnrc.yml, which name a release
// under .yarn/releases, run by every yarn command, as are .yarn/plugins), pnpm's hooks
// (.pnpmfile.cjs; pnpm-workspace.yaml, where pnpm 10 keeps its settings: scriptShell, a
// pnpmfile), corepack's variables (.corepack.env: COREPACK_HOME, where the package
// manager it runs comes from). A change to them would run the command's code at the user's next
// `npm install`, even in a project with no install script of its own, and a .gitignore
// can keep git from showing it. Deleting one runs nothing, and lands.
var toolConfigNames = []string{".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs", ".pnpmfile.mjs", "pnpm-workspace.yaml", ".corepack.env"}

// runsPrograms says whether the path (its names) is a package manager's settings file or
// under its own code (.yarn/releases, .yarn/plugins), at any depth but inside
// node_modules: an installed package may ship a .yarnrc, which no package manager reads
// there (npm, yarn and pnpm look in the project and the directories above it).
func runsPrograms(names []string) bool {
	if slices.Contains(names, "node_modules") {
		return false
	}
	if slices.Contains(toolConfigNames, names[len(names)-1]) {
		return true
	}
	for i := 0; i+1 < len(names); i++ {
		if names[i] == ".yarn" && (names[i+1] == "releases" || names[i+1] == "plugins") {
			return true
		}
	}
	return false
}

// RefusesPath says whether a change at p (relative, slash-separated) is refused by its
// path alone, whatever the change: at or under a guarded path or replacing a parent of
// one, a package manager's settings or code, what a git directory the project already
// holds reads or runs. A --git commit run's branch tips and index are held to it
// (gitmeta.Verify): a commit must not carry back what the work tree refused.
func (r Rules) RefusesPath(p string) bool {
	for _, guarded := range r.Guarded {
		if within(guarded, p) || within(p, guarded) {
			return true
		}
	}
	names := strings.Split(p, "/")
	return runsPrograms(names) || inRepository(names, r.LowerHas)
}
