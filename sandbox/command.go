package sandbox

import (
	"fmt"
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

// lookInside finds a command as the sandbox's execvp would: a name with a slash as it
// stands (relative to the start directory), any other on the inside PATH. The inside
// view of a host path is the host's own wherever a bind shows it, so the host's files
// answer, limited to what the sandbox sees. found: a file exists at the name.
func lookInside(policy Policy, name string) (path string, found bool) {
	var candidates []string
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			name = filepath.Join(policy.StartDir(), name)
		}
		candidates = []string{name}
	} else {
		for _, dir := range filepath.SplitList(policy.InsidePath()) {
			candidates = append(candidates, filepath.Join(dir, name))
		}
	}
	for _, candidate := range candidates {
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

// HostLookPath finds name on the caller's PATH (hostPath), as a hint for a 127: the
// first executable regular file, or "".
func HostLookPath(name, hostPath string) string {
	if name == "" || strings.Contains(name, "/") {
		return ""
	}
	for _, dir := range filepath.SplitList(hostPath) {
		if !filepath.IsAbs(dir) {
			continue
		}
		candidate := filepath.Join(dir, name)
		if info, err := os.Stat(candidate); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
			return candidate
		}
	}
	return ""
}

// NotFoundMessage explains a 127: the inside PATH, and where the host has the command
// with the flag that adds it.
func NotFoundMessage(command, insidePath, hostHas string) string {
	if strings.Contains(command, "/") {
		return fmt.Sprintf("%s: not found inside the sandbox; bind its directory with --ro or --path", command)
	}
	message := fmt.Sprintf("%s: not found inside the sandbox (PATH=%s)", command, insidePath)
	if hostHas == "" {
		return message + "; it is not on your PATH either"
	}
	return message + fmt.Sprintf("; the host has %s: add --path %s", hostHas, filepath.Dir(hostHas))
}
