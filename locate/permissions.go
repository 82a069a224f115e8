package locate

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// PathEntry is one file or directory on the way to a binary, as stat saw it.
type PathEntry struct {
	Path string
	Mode fs.FileMode
	UID  uint32
	GID  uint32
}

// ReplaceableBy lists why someone other than root and caller could replace the binary
// whose entries are given (the file, then every directory above it, in any order): a
// non-root owner who is not the caller (an owner can always chmod), or write access for
// a group or for everyone. A sticky directory (/tmp) lets others add names but not rename
// or remove the caller's, so its write bits do not count. Group write counts whatever the
// group: which users are in it is not the binary's to decide. Empty: only root and the
// caller can replace it.
func ReplaceableBy(entries []PathEntry, caller uint32) []string {
	var findings []string
	for _, entry := range entries {
		sticky := entry.Mode.IsDir() && entry.Mode&fs.ModeSticky != 0
		if entry.UID != 0 && entry.UID != caller {
			findings = append(findings, fmt.Sprintf("%s is owned by uid %d, neither root nor the caller (uid %d)", entry.Path, entry.UID, caller))
		}
		switch {
		case sticky:
		case entry.Mode.Perm()&0o002 != 0:
			findings = append(findings, fmt.Sprintf("%s is writable by every user (mode %04o)", entry.Path, entry.Mode.Perm()))
		case entry.Mode.Perm()&0o020 != 0:
			findings = append(findings, fmt.Sprintf("%s is writable by group %d (mode %04o)", entry.Path, entry.GID, entry.Mode.Perm()))
		}
	}
	return findings
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

// exposure is why a candidate could be replaced by another user: its real file and
// directories, and, when it was found through a symlink, the directories holding the
// link (whoever can write there can point the link elsewhere). "" when none.
func exposure(fsys FileSystem, path, real string, caller uint32) (string, error) {
	entries, err := entriesUpFrom(fsys, real)
	if err != nil {
		return "", err
	}
	if path != real {
		linkDir, err := fsys.EvalSymlinks(filepath.Dir(path))
		if err != nil {
			return "", err
		}
		more, err := entriesUpFrom(fsys, linkDir)
		if err != nil {
			return "", err
		}
		entries = append(entries, more...)
	}
	var unique []string
	for _, finding := range ReplaceableBy(entries, caller) {
		if !slices.Contains(unique, finding) {
			unique = append(unique, finding)
		}
	}
	return strings.Join(unique, "; "), nil
}

// idsOf returns the owner uid and gid, or 0 where the FileInfo carries none.
func idsOf(info fs.FileInfo) (uint32, uint32) {
	if stat, ok := info.Sys().(*syscall.Stat_t); ok {
		return stat.Uid, stat.Gid
	}
	return 0, 0
}
