package doctor

import (
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// PathEntry is one path on the way to the bwrap binary (the file itself, then each parent
// directory up to /), as lstat saw it.
type PathEntry struct {
	Path string
	Mode fs.FileMode
	UID  uint32
	GID  uint32
}

// ReplaceableBy lists who, besides root and the binary's owner, could replace the binary:
// anyone who can write the file or any directory above it. A sticky directory (like /tmp)
// lets others add entries but not rename or remove ours, so it is not counted. entries[0]
// is the file.
func ReplaceableBy(entries []PathEntry) []string {
	if len(entries) == 0 {
		return nil
	}
	owner := entries[0].UID
	var findings []string
	for _, entry := range entries {
		sticky := entry.Mode.IsDir() && entry.Mode&fs.ModeSticky != 0
		switch {
		case entry.Mode.Perm()&0o002 != 0 && !sticky:
			findings = append(findings, fmt.Sprintf("%s is writable by every user (mode %v)", entry.Path, entry.Mode.Perm()))
		case entry.Mode.Perm()&0o020 != 0 && entry.GID != 0 && !sticky:
			findings = append(findings, fmt.Sprintf("%s is writable by group %d (mode %v)", entry.Path, entry.GID, entry.Mode.Perm()))
		}
		// A directory's owner can always chmod it and swap what is inside.
		if entry.UID != 0 && entry.UID != owner && (entry.Mode.IsDir() || entry.Mode.Perm()&0o200 != 0) {
			findings = append(findings, fmt.Sprintf("%s is owned by uid %d, who is neither root nor the binary's owner", entry.Path, entry.UID))
		}
	}
	return findings
}

// IsStatic reports whether an ELF executable has no program interpreter (PT_INTERP): a
// static or static-pie binary, which runs without the host's loader and libraries.
func IsStatic(r io.ReaderAt) (bool, error) {
	file, err := elf.NewFile(r)
	if err != nil {
		return false, err
	}
	defer file.Close()
	for _, prog := range file.Progs {
		if prog.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}

// binaryFacts is what the file system says about the bwrap binary.
type binaryFacts struct {
	Entries  []PathEntry // file first, then parents
	Setuid   bool
	Static   bool
	ELFError string // why the file could not be read as ELF; "" when it was
	Err      error  // the binary could not be inspected at all
}

// inspectBinary stats path and its parents and reads its ELF headers.
func inspectBinary(path string) binaryFacts {
	var facts binaryFacts
	for current := path; ; current = filepath.Dir(current) {
		info, err := os.Lstat(current)
		if err != nil {
			facts.Err = err
			return facts
		}
		entry := PathEntry{Path: current, Mode: info.Mode()}
		if stat, ok := info.Sys().(*syscall.Stat_t); ok {
			entry.UID, entry.GID = stat.Uid, stat.Gid
		}
		facts.Entries = append(facts.Entries, entry)
		if current == "/" || current == "." {
			break
		}
	}
	facts.Setuid = facts.Entries[0].Mode&fs.ModeSetuid != 0
	file, err := os.Open(path)
	if err != nil {
		facts.ELFError = err.Error()
		return facts
	}
	defer file.Close()
	static, err := IsStatic(file)
	if err != nil {
		facts.ELFError = err.Error()
	}
	facts.Static = static
	return facts
}
