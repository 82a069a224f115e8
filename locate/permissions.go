package locate

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/bwrapkit/bwrapkit/internal/trust"
)

// PathEntry is one file or directory on the way to a binary, as stat saw it.
type PathEntry = trust.Entry

// ReplaceableBy lists why someone other than root and the caller could replace the binary
// whose entries are given (the file, then every directory above it, in any order): the
// rule of package trust, for a caller who reads owners as viewer does. Empty: only root and
// the caller can replace it.
func ReplaceableBy(entries []PathEntry, viewer trust.Viewer) []string {
	return trust.Replaceable(entries, viewer)
}

// viewerOf is how fsys's owners read: the real host's namespace for OS, the initial
// namespace for a file system that says nothing (a fixture's owners mean what they say).
func viewerOf(fsys FileSystem) trust.Viewer {
	if viewing, ok := fsys.(interface{ Viewer() trust.Viewer }); ok {
		return viewing.Viewer()
	}
	return trust.Initial(uint32(fsys.Getuid()))
}

// Inside reports the first of dirs that holds bwrap (or is bwrap): a sandbox that may
// write there could replace the binary the next run executes. Both sides must be fully
// resolved absolute paths; the test is on path components, so /work/project is not
// inside /work/proj.
func Inside(bwrap string, dirs []string) (string, bool) {
	bwrap = filepath.Clean(bwrap)
	for _, dir := range dirs {
		clean := filepath.Clean(dir)
		if clean == bwrap || clean == "/" || strings.HasPrefix(bwrap, clean+"/") {
			return dir, true
		}
	}
	return "", false
}

// entriesUpFrom stats path and each directory above it, without following symlinks.
func entriesUpFrom(fsys FileSystem, path string) ([]PathEntry, error) {
	var entries []PathEntry
	for current := path; ; current = filepath.Dir(current) {
		info, err := fsys.Lstat(current)
		if err != nil {
			return nil, err
		}
		uid, gid := idsOf(info)
		entries = append(entries, PathEntry{Path: current, Mode: info.Mode(), UID: uid, GID: gid})
		if current == "/" {
			return entries, nil
		}
	}
}

// Replaceable is why another user or a sandbox could replace the bwrap at path: its real
// file and directories, and, when path is a symlink, the directories holding the link
// (whoever can write there can point the link elsewhere). "" when no one could. notes name
// what was accepted only because its owner is unmapped here.
func Replaceable(fsys FileSystem, path string) (findings string, notes []string, err error) {
	real, err := fsys.EvalSymlinks(path)
	if err != nil {
		return "", nil, err
	}
	return exposure(fsys, path, real)
}

// exposure is Replaceable with the symlinks already resolved.
func exposure(fsys FileSystem, path, real string) (string, []string, error) {
	findings, notes, _, err := exposureOf(fsys, path, real)
	return findings, notes, err
}

// exposureOf is exposure, and whether the owners were ambiguous (trust.Ambiguous).
func exposureOf(fsys FileSystem, path, real string) (string, []string, bool, error) {
	entries, err := entriesUpFrom(fsys, real)
	if err != nil {
		return "", nil, false, err
	}
	if path != real {
		linkDir, err := fsys.EvalSymlinks(filepath.Dir(path))
		if err != nil {
			return "", nil, false, err
		}
		more, err := entriesUpFrom(fsys, linkDir)
		if err != nil {
			return "", nil, false, err
		}
		entries = append(entries, more...)
	}
	viewer := viewerOf(fsys)
	var unique []string
	for _, finding := range ReplaceableBy(entries, viewer) {
		if !slices.Contains(unique, finding) {
			unique = append(unique, finding)
		}
	}
	return strings.Join(unique, "; "), trust.Notes(entries, viewer), trust.Ambiguous(entries, viewer), nil
}

// idsOf returns the owner uid and gid, or 0 where the FileInfo carries none.
func idsOf(info fs.FileInfo) (uint32, uint32) {
	if stat, ok := info.Sys().(*syscall.Stat_t); ok {
		return stat.Uid, stat.Gid
	}
	return 0, 0
}
