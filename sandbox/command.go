package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// CommandFailure is why a sandbox that was built did not run its command.
type CommandFailure string

const (
	CommandNotFound      CommandFailure = "command-not-found"      // 127: not on the inside PATH
	CommandNotExecutable CommandFailure = "command-not-executable" // 126: found, but exec refused it
)

// execCandidates are the paths the sandbox's execvp tries for name, in order: a name with
// a slash as it stands (relative to the start directory), any other in each directory of
// the inside PATH.
func execCandidates(policy Policy, name string) []string {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			name = filepath.Join(policy.StartDir(), name)
		}
		return []string{name}
	}
	var candidates []string
	for _, dir := range filepath.SplitList(policy.InsidePath()) {
		candidates = append(candidates, filepath.Join(dir, name))
	}
	return candidates
}

// lookInside finds a command as the sandbox's execvp would: a name with a slash as it
// stands (relative to the start directory), any other on the inside PATH. The inside
// view of a host path is the host's own wherever a bind shows it, so the host's files
// answer, limited to what the sandbox sees. found: a file exists at the name.
func lookInside(policy Policy, name string) (path string, found bool) {
	for _, candidate := range execCandidates(policy, name) {
		real := resolveInside(policy, candidate)
		if real == "" || !policy.visible(real) {
			continue
		}
		if info, err := os.Stat(real); err == nil && !info.IsDir() {
			return candidate, true
		}
	}
	return "", false
}

// resolveInside resolves a path through the links the sandbox recreates, then the host's.
func resolveInside(policy Policy, path string) string {
	for _, link := range policy.Links {
		if within(link.Path, path) {
			path = filepath.Join(link.Target, strings.TrimPrefix(path, link.Path))
		}
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	return real
}

// HiddenLinkTarget finds why a name the sandbox shows could not be executed: on the way
// the inside execvp goes (lookInside's candidates), a symlink that is visible inside but
// leads to a file outside everything bound, as a venv's bin/python made from pyenv's or
// a user-installed Python does. It returns the link and its resolved target, or "", "".
func HiddenLinkTarget(policy Policy, name string) (link, target string) {
	for _, candidate := range execCandidates(policy, name) {
		info, err := os.Lstat(candidate)
		if err != nil || info.Mode()&os.ModeSymlink == 0 || !policy.visible(filepath.Dir(candidate)) {
			continue
		}
		real, err := filepath.EvalSymlinks(candidate)
		if err != nil || policy.visible(real) {
			continue
		}
		return candidate, real
	}
	return "", ""
}

// FoundInside: the sandbox's execvp would find a file for name (see lookInside).
func FoundInside(policy Policy, name string) bool {
	_, found := lookInside(policy, name)
	return found
}
