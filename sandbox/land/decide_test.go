package land

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	const started = 1000
	old := Lower{Kind: KindFile, Mode: 0o644, ChangedNS: started - 1}
	oldDir := Lower{Kind: KindDir, Mode: 0o755, ChangedNS: started - 1}
	absent := Lower{Kind: KindAbsent}
	file := func(path string, lower Lower) Entry {
		return Entry{Path: path, Kind: KindFile, Mode: 0o644, Gid: 7, Nlink: 1, Lower: lower}
	}
	dir := func(path string, mode uint32, lower Lower) Entry {
		return Entry{Path: path, Kind: KindDir, Mode: mode, Gid: 7, Nlink: 1, Lower: lower}
	}
	with := func(e Entry, change func(*Entry)) Entry { change(&e); return e }
	rules := Rules{CallerGid: 7, StartedNS: started, Guarded: []string{"ci/policy.json", "bwrapkit", "hooks"}}
	commit := rules
	commit.GitCommit = true
	cases := []struct {
		name   string
		entry  Entry
		rules  Rules
		action Action
		rule   Rule
	}{
		{"a new file lands", file("src/a.go", absent), rules, Apply, ""},
		{"a changed file lands", file("a.go", old), rules, Apply, ""},
		{"an unchanged copy-up is skipped", with(file("a.go", old), func(e *Entry) { e.Same = true }), rules, Skip, ""},
		{"a copied-up directory is skipped", dir("src", 0o755, oldDir), rules, Skip, ""},
		{"a directory's new mode lands", dir("src", 0o700, oldDir), rules, Apply, ""},
		{"a deletion lands", Entry{Path: "a.go", Kind: KindWhiteout, Lower: old}, rules, Apply, ""},
		{"deleting what is gone is skipped", Entry{Path: "a.go", Kind: KindWhiteout, Lower: absent}, rules, Skip, ""},
		{"a nested .git directory", dir("sub/.git", 0o755, absent), rules, Refuse, RuleNestedGit},
		{"a nested .git file", file("vendor/x/.git", absent), rules, Refuse, RuleNestedGit},
		{"a top .git where the project had none", dir(".git", 0o755, absent), rules, Refuse, RuleNestedGit},
		{"a change under .git, readonly", file(".git/config", old), rules, Refuse, RuleGitReadOnly},
		{"commit: config", file(".git/config", old), commit, Refuse, RuleGitCommit},
		{"commit: a hook", file(".git/hooks/pre-commit", absent), commit, Refuse, RuleGitCommit},
		{"commit: commondir", file(".git/commondir", absent), commit, Refuse, RuleGitCommit},
		{"commit: a verified loose object", with(file(".git/objects/ab/cdef", absent), func(e *Entry) { e.GitOK = true }), commit, Apply, ""},
		{"commit: an unverified loose object", file(".git/objects/ab/cdef", absent), commit, Refuse, RuleGitCommit},
		{"commit: a tag, even verified", with(file(".git/refs/tags/v1", absent), func(e *Entry) { e.GitOK = true }), commit, Refuse, RuleGitCommit},
		{"commit: a left ref lock, even verified", with(file(".git/refs/heads/main.lock", absent), func(e *Entry) { e.GitOK = true }), commit, Refuse, RuleGitCommit},
		{"commit: a verified branch ref", with(file(".git/refs/heads/main", old), func(e *Entry) { e.GitOK = true }), commit, Apply, ""},
		{"commit: a branch ref that changes a guarded path", file(".git/refs/heads/main", old), commit, Refuse, RuleGitCommit},
		{"commit: a tag ref", file(".git/refs/tags/v1", absent), commit, Refuse, RuleGitCommit},
		{"commit: a verified index", with(file(".git/index", old), func(e *Entry) { e.GitOK = true }), commit, Apply, ""},
		{"commit: an index git does not read the same", file(".git/index", old), commit, Refuse, RuleGitCommit},
		{"commit: a shared index", file(".git/sharedindex.0123", absent), commit, Refuse, RuleGitCommit},
		{"commit: COMMIT_EDITMSG", file(".git/COMMIT_EDITMSG", absent), commit, Apply, ""},
		{"commit: a left lock", file(".git/refs/heads/main.lock", absent), commit, Refuse, RuleGitCommit},
		{"a branch ref, readonly", file(".git/refs/heads/main", old), rules, Refuse, RuleGitReadOnly},
		{"commit: .git given a new mode", dir(".git", 0o700, oldDir), commit, Refuse, RuleGitCommit},
		{"commit: .git replaced by a file", file(".git", oldDir), commit, Refuse, RuleGitCommit},
		{"commit: an unverified HEAD", file(".git/HEAD", old), commit, Refuse, RuleGitCommit},
		{"commit: deleting a hook", Entry{Path: ".git/hooks/pre-commit", Kind: KindWhiteout, Lower: old}, commit, Refuse, RuleGitCommit},
		{"commit: deleting a branch", Entry{Path: ".git/refs/heads/topic", Kind: KindWhiteout, Lower: old}, commit, Apply, ""},
		{"commit: a directory under .git given a new mode", dir(".git/refs", 0o700, oldDir), commit, Refuse, RuleGitCommit},
		{"commit: a new directory in objects but a fan-out or pack", dir(".git/objects/info", 0o755, absent), commit, Refuse, RuleGitCommit},
		{"commit: a new fan-out directory", dir(".git/objects/ab", 0o755, absent), commit, Apply, ""},
		{"commit: a new directory in refs but heads", dir(".git/refs/tags", 0o755, absent), commit, Refuse, RuleGitCommit},
		{"commit: a new hooks directory", dir(".git/hooks", 0o755, absent), commit, Refuse, RuleGitCommit},
		{"commit: a left log lock, even verified", with(file(".git/logs/HEAD.lock", absent), func(e *Entry) { e.GitOK = true }), commit, Refuse, RuleGitCommit},
		{"commit: a checked log", with(file(".git/logs/HEAD", old), func(e *Entry) { e.GitOK = true }), commit, Apply, ""},
		{"commit: a log naming a commit that failed", file(".git/logs/HEAD", old), commit, Refuse, RuleGitCommit},
		{"commit: ORIG_HEAD not checked", file(".git/ORIG_HEAD", absent), commit, Refuse, RuleGitCommit},
		{"commit: a left log lock", file(".git/logs/HEAD.lock", absent), commit, Refuse, RuleGitCommit},
		{"an absolute symlink", Entry{Path: "l", Kind: KindSymlink, Target: "/etc/passwd", Lower: absent}, rules, Refuse, RuleSymlinkAbs},
		{"a symlink out", Entry{Path: "a/l", Kind: KindSymlink, Target: "../../x", Lower: absent}, rules, Refuse, RuleSymlinkEscape},
		{"a symlink up through a name", Entry{Path: "l", Kind: KindSymlink, Target: "vendor/../x", Lower: absent}, rules, Refuse, RuleSymlinkEscape},
		{"a symlink up through a name, not above the top", Entry{Path: "a/b/l", Kind: KindSymlink, Target: "vendor/../x", Lower: absent}, rules, Refuse, RuleSymlinkEscape},
		{"a symlink up, still inside", Entry{Path: "a/b/l", Kind: KindSymlink, Target: "../../x", Lower: absent}, rules, Apply, ""},
		{"a symlink beside", Entry{Path: "l", Kind: KindSymlink, Target: "a.go", Lower: absent}, rules, Apply, ""},
		{"a FIFO", Entry{Path: "f", Kind: KindSpecial, Lower: absent}, rules, Refuse, RuleSpecial},
		{"a world-writable directory", dir("open", 0o777, absent), rules, Refuse, RuleWorldWritable},
		{"a world-writable file", with(file("w", absent), func(e *Entry) { e.Mode = 0o666 }), rules, Refuse, RuleWorldWritable},
		{"group-writable, the caller's group", with(file("g", absent), func(e *Entry) { e.Mode = 0o664 }), rules, Apply, ""},
		{"group-writable, another group", with(file("g", absent), func(e *Entry) { e.Mode = 0o664; e.Gid = 8 }), rules, Refuse, RuleGroupWritable},
		{"setuid", with(file("s", absent), func(e *Entry) { e.Mode = 0o4755 }), rules, Refuse, RuleSetID},
		{"setgid directory", dir("d", 0o2755, absent), rules, Refuse, RuleSetID},
		{"the policy file", file("ci/policy.json", old), rules, Refuse, RuleProtected},
		{"bwrapkit's binary", file("bwrapkit", old), rules, Refuse, RuleProtected},
		{"a new hook in the guarded hooks directory", file("hooks/pre-commit", absent), rules, Refuse, RuleProtected},
		{"deleting a guarded file's directory", Entry{Path: "ci", Kind: KindWhiteout, Lower: oldDir}, rules, Refuse, RuleProtected},
		{"replacing a guarded file's directory", with(dir("ci", 0o755, oldDir), func(e *Entry) { e.Opaque = true }), rules, Refuse, RuleProtected},
		{"a new .npmrc (script-shell, node-options)", file(".npmrc", absent), rules, Refuse, RuleToolConfig},
		{"a changed .npmrc in a package below", file("web/.npmrc", old), rules, Refuse, RuleToolConfig},
		{"a .yarnrc.yml (yarnPath)", file(".yarnrc.yml", old), rules, Refuse, RuleToolConfig},
		{"a changed yarn release", file("app/.yarn/releases/yarn-4.1.0.cjs", old), rules, Refuse, RuleToolConfig},
		{"a new yarn plugin", file(".yarn/plugins/x.cjs", absent), rules, Refuse, RuleToolConfig},
		{"pnpm's hooks", file(".pnpmfile.cjs", absent), rules, Refuse, RuleToolConfig},
		{"a deleted .npmrc runs nothing", Entry{Path: ".npmrc", Kind: KindWhiteout, Lower: old}, rules, Apply, ""},
		{"yarn's cache is not its code", file(".yarn/cache/x.zip", absent), rules, Apply, ""},
		{"an installed package's own .yarnrc", file("node_modules/left-pad/.yarnrc", absent), rules, Apply, ""},
		{"a file the host changed meanwhile", file("a.go", Lower{Kind: KindFile, Mode: 0o644, ChangedNS: started + 5}), rules, Refuse, RuleConflict},
		{"a deletion of what the host changed", Entry{Path: "a.go", Kind: KindWhiteout, Lower: Lower{Kind: KindFile, ChangedNS: started}}, rules, Refuse, RuleConflict},
		{"a metacopy file", with(file("m", old), func(e *Entry) { e.Metacopy = true }), rules, Refuse, RuleMetacopy},
		{"the top made world-writable", dir("", 0o777, oldDir), rules, Refuse, RuleWorldWritable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Decide([]Entry{c.entry}, c.rules)[0]
			if got.Action != c.action || got.Rule != c.rule {
				t.Errorf("got action %d rule %q, want %d %q", got.Action, got.Rule, c.action, c.rule)
			}
		})
	}
}

func TestDecideRefusesWhatLiesInARefusedDirectory(t *testing.T) {
	entries := []Entry{
		{Path: "open", Kind: KindDir, Mode: 0o777, Lower: Lower{Kind: KindAbsent}},
		{Path: "open/f", Kind: KindFile, Mode: 0o644, Nlink: 1, Lower: Lower{Kind: KindAbsent}},
		{Path: "openly", Kind: KindFile, Mode: 0o644, Nlink: 1, Lower: Lower{Kind: KindAbsent}},
	}
	got := Decide(entries, Rules{})
	if got[1].Action != Refuse || got[1].Rule != RuleInsideRefused || got[2].Action != Apply {
		t.Errorf("got %+v", got)
	}
}

func TestDecideMarksWholeNewDirectories(t *testing.T) {
	absent := Lower{Kind: KindAbsent}
	entries := []Entry{
		{Path: "gen", Kind: KindDir, Mode: 0o755, Lower: absent},
		{Path: "gen/a", Kind: KindFile, Mode: 0o644, Nlink: 1, Lower: absent},
		{Path: "linked", Kind: KindDir, Mode: 0o755, Lower: absent},
		{Path: "linked/a", Kind: KindFile, Mode: 0o644, Nlink: 2, Lower: absent},
		{Path: "mixed", Kind: KindDir, Mode: 0o755, Lower: absent},
		{Path: "mixed/l", Kind: KindSymlink, Target: "/etc", Lower: absent},
	}
	got := Decide(entries, Rules{})
	if !got[0].Whole || got[2].Whole || got[4].Whole {
		t.Errorf("whole: gen %v, linked %v, mixed %v; want true, false, false", got[0].Whole, got[2].Whole, got[4].Whole)
	}
}

// TestDecideRefusesTheShapeOfARepository: the reviewer's bare repository planted in src/
// (HEAD, objects/, refs/, config with a core.fsmonitor) carries no .git name at all, yet
// git takes src for a repository. Judged over what src holds once the change lands, the
// project's own files counted.
func TestDecideRefusesTheShapeOfARepository(t *testing.T) {
	absent := Lower{Kind: KindAbsent}
	newFile := func(p string) Entry { return Entry{Path: p, Kind: KindFile, Mode: 0o644, Lower: absent} }
	newDir := func(p string) Entry { return Entry{Path: p, Kind: KindDir, Mode: 0o755, Lower: absent} }
	verdicts := func(entries []Entry, lowerHas func(dir, name string) bool) map[string]Rule {
		got := map[string]Rule{}
		for _, d := range Decide(entries, Rules{LowerHas: lowerHas}) {
			if d.Action == Refuse {
				got[d.Entry.Path] = d.Rule
			}
		}
		return got
	}
	bare := []Entry{newDir("src/objects"), newDir("src/refs"), newFile("src/HEAD"), newFile("src/config")}
	if got := verdicts(bare, nil); got["src/HEAD"] != RuleGitShape || got["src/objects"] != RuleGitShape || got["src/refs"] != RuleGitShape {
		t.Errorf("a bare repository planted in src: refused %v", got)
	}
	// What the planted objects/ and refs/ hold is refused with them: it has nowhere to
	// land (before, landing it failed midway, after the rest had landed).
	filled := append(append([]Entry{}, bare[:2]...), newDir("src/objects/4b"), newFile("src/objects/4b/1d"), newDir("src/refs/heads"), newFile("src/refs/heads/main"))
	filled = append(filled, bare[2:]...)
	slices.SortFunc(filled, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	got := verdicts(filled, nil)
	for _, inside := range []string{"src/objects/4b", "src/objects/4b/1d", "src/refs/heads", "src/refs/heads/main"} {
		if got[inside] != RuleInsideRefused {
			t.Errorf("%s under a refused repository's directory: refused %q, want %q", inside, got[inside], RuleInsideRefused)
		}
	}
	// A repository the project already holds (a bare fixture): what git reads or runs
	// there is refused; its other files, and a config elsewhere, are the project's.
	fixture := func(dir, name string) bool { return dir == "testdata/fixture.git" && name != "commondir" }
	for path, want := range map[string]Rule{
		"testdata/fixture.git/config":              RuleGitShape,
		"testdata/fixture.git/hooks/post-checkout": RuleGitShape,
		"testdata/fixture.git/description":         "",
		"docs/config":                              "",
	} {
		if got := verdicts([]Entry{newFile(path)}, fixture); got[path] != want {
			t.Errorf("%s beside an existing bare repository: refused %q, want %q", path, got[path], want)
		}
	}
	// A fixture below a directory named hooks is found all the same.
	deep := func(dir, name string) bool { return dir == "test/hooks/fixture.git" && name != "commondir" }
	for _, path := range []string{"test/hooks/fixture.git/config", "test/hooks/fixture.git/hooks/pre-receive"} {
		if got := verdicts([]Entry{newFile(path)}, deep); got[path] != RuleGitShape {
			t.Errorf("%s in a bare repository below a hooks directory: refused %q", path, got[path])
		}
	}
	// The same shape completed by the project's own files: a HEAD the project already had.
	lowerHEAD := func(dir, name string) bool { return dir == "src" && name == "HEAD" }
	if got := verdicts(bare[:2], lowerHEAD); got["src/objects"] != RuleGitShape || got["src/refs"] != RuleGitShape {
		t.Errorf("objects and refs beside the project's own src/HEAD: refused %v", got)
	}
	// A worktree's shape: HEAD and commondir.
	if got := verdicts([]Entry{newFile("w/HEAD"), newFile("w/commondir")}, nil); got["w/HEAD"] != RuleGitShape {
		t.Errorf("HEAD with a commondir: refused %v", got)
	}
	// Controls: a HEAD, or objects and refs, alone are ordinary project files.
	for _, entries := range [][]Entry{{newFile("docs/HEAD")}, {newDir("build/objects"), newDir("build/refs")}, {newFile("src/HEAD"), newDir("src/refs")}} {
		if got := verdicts(entries, nil); len(got) != 0 {
			t.Errorf("%v: refused %v, want nothing refused", entries[0].Path, got)
		}
	}
	// The project's own .git has rules of its own, not these.
	if got := verdicts([]Entry{newFile(".git/HEAD")}, func(dir, name string) bool { return dir == ".git" }); got[".git/HEAD"] == RuleGitShape {
		t.Error("the project's own .git was judged as a planted repository")
	}
}

func TestDecideRefusesSymlinksThroughGit(t *testing.T) {
	absent := Lower{Kind: KindAbsent}
	for _, tc := range []struct {
		path, target string
		refused      bool
	}{
		{"src", ".git", true},
		{"cfglink", ".git/config", true},
		{"a/b", "../.git/hooks", true},
		{"a/b", "../src/x.go", false},
		{"gitignore-link", ".gitignore", false},
	} {
		decisions := Decide([]Entry{{Path: tc.path, Kind: KindSymlink, Target: tc.target, Lower: absent}}, Rules{})
		got := decisions[len(decisions)-1]
		if refused := got.Action == Refuse && got.Rule == RuleSymlinkGit; refused != tc.refused {
			t.Errorf("%s -> %s: %v %q, want refused %v", tc.path, tc.target, got.Action, got.Rule, tc.refused)
		}
	}
}

// TestRefusesPath: what a --git commit run's commits and index are held to, by path alone:
// a guarded path, what lies under it and its parents (a parent swapped for a symlink
// replaces it), a package manager's settings, a bare fixture's config; not the guarded
// path's siblings, nor an installed package's own files.
func TestRefusesPath(t *testing.T) {
	rules := Rules{Guarded: []string{".husky/_"}, LowerHas: func(dir, name string) bool { return dir == "fx.git" && name != "commondir" }}
	for path, want := range map[string]bool{
		".husky/_": true, ".husky/_/pre-commit": true, ".husky": true,
		".npmrc": true, "web/pnpm-workspace.yaml": true, ".corepack.env": true, "fx.git/config": true,
		".husky/README": false, "src/main.go": false, "node_modules/x/.npmrc": false, "fx.git/description": false,
	} {
		if got := rules.RefusesPath(path); got != want {
			t.Errorf("RefusesPath(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestDecideKeepsBranches: with --git commit, a branch's deletion lands unless it would
// lose the branch: the one the host has checked out, or one the run's packed-refs names
// (git gc moved the loose ref there; packed-refs itself never lands).
func TestDecideKeepsBranches(t *testing.T) {
	oldRef := Lower{Kind: KindFile, Mode: 0o644, ChangedNS: 1}
	deleted := func(p string) Entry { return Entry{Path: p, Kind: KindWhiteout, Lower: oldRef} }
	rules := Rules{GitCommit: true, CurrentBranch: "refs/heads/main", StartedNS: 1000}
	verdict := func(entries []Entry) map[string]Action {
		got := map[string]Action{}
		for _, d := range Decide(entries, rules) {
			got[d.Entry.Path] = d.Action
		}
		return got
	}
	got := verdict([]Entry{deleted(".git/refs/heads/main"), deleted(".git/refs/heads/old")})
	if got[".git/refs/heads/main"] != Refuse || got[".git/refs/heads/old"] != Apply {
		t.Errorf("deleting the checked-out branch and another: %v", got)
	}
	packed := Entry{Path: ".git/packed-refs", Kind: KindFile, Mode: 0o644, Lower: Lower{Kind: KindAbsent}}
	rules.Packed = func(ref string) bool { return ref == "refs/heads/old" }
	got = verdict([]Entry{packed, deleted(".git/refs/heads/old"), deleted(".git/refs/heads/gone")})
	if got[".git/refs/heads/old"] != Refuse || got[".git/refs/heads/gone"] != Apply {
		t.Errorf("deletions beside a packed-refs naming one of them (git gc), and not the other (git branch -D): %v", got)
	}
}

// TestRefuseInsideFollowsTheWalk: everything below a refused new directory is refused
// with it, a sibling whose name merely starts with the directory's is not, and the
// entries after the directory's subtree are decided on their own.
func TestRefuseInsideFollowsTheWalk(t *testing.T) {
	dir := func(path string, action Action) Decision {
		return Decision{Action: action, Entry: Entry{Path: path, Kind: KindDir, Lower: Lower{Kind: KindAbsent}}}
	}
	file := func(path string) Decision {
		return Decision{Action: Apply, Entry: Entry{Path: path, Kind: KindFile, Lower: Lower{Kind: KindAbsent}}}
	}
	decisions := []Decision{
		dir("d1", Refuse), file("d1/f"), dir("d1/sub", Apply), file("d1/sub/g"),
		file("d1-sibling"), dir("d10", Apply), file("d10/f"), dir("e", Refuse), file("e/f"), file("z"),
	}
	decisions[0].Rule, decisions[7].Rule = RuleWorldWritable, RuleWorldWritable
	refuseInside(decisions)
	want := map[string]Rule{"d1": RuleWorldWritable, "d1/f": RuleInsideRefused, "d1/sub": RuleInsideRefused, "d1/sub/g": RuleInsideRefused, "e": RuleWorldWritable, "e/f": RuleInsideRefused}
	for _, decision := range decisions {
		rule, refused := want[decision.Entry.Path]
		if refused != (decision.Action == Refuse) || refused && decision.Rule != rule {
			t.Errorf("%s: %v %q, want refused %v %q", decision.Entry.Path, decision.Action, decision.Rule, refused, rule)
		}
	}
}

// BenchmarkDecideManyRefusedDirectories: 60,000 refused new directories, a file in each.
// Searching a list of every refused directory for each entry took 47 s; one comparison
// an entry (the walk is depth first) takes milliseconds.
func BenchmarkDecideManyRefusedDirectories(b *testing.B) {
	var entries []Entry
	for i := range 60000 {
		dir := fmt.Sprintf("d%06d", i)
		entries = append(entries, Entry{Path: dir, Kind: KindDir, Mode: 0o777, Lower: Lower{Kind: KindAbsent}},
			Entry{Path: dir + "/f", Kind: KindFile, Mode: 0o644, Nlink: 1, Lower: Lower{Kind: KindAbsent}})
	}
	rules := Rules{CallerGid: 1, StartedNS: 1 << 62}
	for b.Loop() {
		Decide(entries, rules)
	}
}
