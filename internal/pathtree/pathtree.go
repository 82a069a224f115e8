// Package pathtree answers where a path lies in the file tree: whether it is a directory
// or below it (lexically, no link followed), and what a path resolves to when its tail
// does not exist yet. sandbox and its git rules ask the same questions, answered here once.
package pathtree

import (
	"path/filepath"
	"strings"
)

// Within reports whether path is dir or below it. An empty path is no place: an unset
// directory (the HOME of a caller whose HOME is ephemeral) encloses nothing, and
// nothing lies inside it.
func Within(dir, path string) bool {
	if dir == "" || path == "" {
		return false
	}
	return path == dir || dir == "/" || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// ResolveExisting resolves the longest existing prefix of path and keeps the rest.
func ResolveExisting(path string) string { return ResolveExistingWith(path, filepath.EvalSymlinks) }

// ResolveExistingWith is ResolveExisting with evalSymlinks in place of
// filepath.EvalSymlinks (a caller's memo of its answers).
func ResolveExistingWith(path string, evalSymlinks func(string) (string, error)) string {
	rest := ""
	for current := path; ; current = filepath.Dir(current) {
		if real, err := evalSymlinks(current); err == nil {
			return filepath.Join(real, rest)
		}
		if current == "/" || current == "." {
			return path
		}
		rest = filepath.Join(filepath.Base(current), rest)
	}
}
