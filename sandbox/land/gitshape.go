package land

import (
	"path"
	"strings"
)

// A directory needs no entry named .git to be a repository: git's discovery
// (setup.c's is_git_directory) takes any directory holding HEAD beside objects/ and
// refs/ (or a commondir file) for a git directory when it meets one on its way up, so a
// command that writes src/HEAD, src/objects, src/refs and src/config has made a bare
// repository whose core.fsmonitor the host's next `git status` in src runs. So the
// names that make that shape are judged together, per directory, over what the
// directory will hold once the change has landed.

// gitShapeNames are the entries is_git_directory looks for.
var gitShapeNames = []string{"HEAD", "objects", "refs", "commondir"}

// refuseGitShapes refuses, in every directory but the project's own .git, each change
// that would leave the directory in the shape of a git directory. lowerHas says whether
// the project (the lower layer) already has dir/name; nil is "no".
func refuseGitShapes(decisions []Decision, lowerHas func(dir, name string) bool) {
	type change struct {
		index   int
		present bool // the entry is there once the change lands
	}
	byDir := map[string]map[string]change{}
	for i, decision := range decisions {
		entry := decision.Entry
		dir, name := path.Split(entry.Path)
		dir = strings.TrimSuffix(dir, "/")
		if !isGitShapeName(name) || dir == ".git" || strings.HasPrefix(dir, ".git/") {
			continue
		}
		if decision.Action != Apply && decision.Action != Skip {
			continue
		}
		gone := entry.Kind == KindWhiteout || entry.Deleted
		if byDir[dir] == nil {
			byDir[dir] = map[string]change{}
		}
		byDir[dir][name] = change{index: i, present: !gone}
	}
	for dir, changes := range byDir {
		has := func(name string) bool {
			if c, ok := changes[name]; ok {
				return c.present
			}
			return lowerHas != nil && lowerHas(dir, name)
		}
		if !has("HEAD") || !(has("commondir") || has("objects") && has("refs")) {
			continue
		}
		for _, c := range changes {
			if c.present && decisions[c.index].Action == Apply {
				decisions[c.index].Action, decisions[c.index].Rule = Refuse, RuleGitShape
			}
		}
	}
}

func isGitShapeName(name string) bool {
	for _, shape := range gitShapeNames {
		if name == shape {
			return true
		}
	}
	return false
}

// throughGit reports whether a relative symlink at linkPath resolves through the
// project's .git (or any .git): a host tool writing through the link would write git's
// own files.
func throughGit(linkPath, target string) bool {
	for _, part := range strings.Split(path.Join(path.Dir(linkPath), target), "/") {
		if part == ".git" {
			return true
		}
	}
	return false
}

// A directory the project already holds in the shape of a git directory (a bare
// repository kept as a test fixture, testdata/fixture.git) is one a host git uses when it
// is started in it or below: a change to what it reads or runs there (its config, a
// commondir that sends it elsewhere, its hooks) is refused as a planted repository is.
// Its objects and refs may change, as the project's files.

// repositoryParts are the directories whose config, config.worktree, commondir or hooks
// the path (its names) would be, outside the project's own .git: every one, as a bare
// fixture can sit below a directory named hooks (test/hooks/fixture.git/config).
func repositoryParts(names []string) []string {
	if names[0] == ".git" {
		return nil
	}
	var parts []string
	for i, name := range names {
		last := i == len(names)-1
		if name == "hooks" && !last || last && (name == "config" || name == "config.worktree" || name == "commondir") {
			parts = append(parts, path.Join(names[:i]...))
		}
	}
	return parts
}

// inRepository says whether the path (its names) is what a git directory the project
// already holds reads or runs (repositoryParts, gitShaped).
func inRepository(names []string, lowerHas func(dir, name string) bool) bool {
	if lowerHas == nil {
		return false
	}
	for _, repo := range repositoryParts(names) {
		if gitShaped(repo, lowerHas) {
			return true
		}
	}
	return false
}

// gitShaped says whether the project's dir (as it is on the host) has the shape git's
// discovery takes for a git directory.
func gitShaped(dir string, lowerHas func(dir, name string) bool) bool {
	return lowerHas(dir, "HEAD") && (lowerHas(dir, "commondir") || lowerHas(dir, "objects") && lowerHas(dir, "refs"))
}
