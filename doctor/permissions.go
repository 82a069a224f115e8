package doctor

import (
	"debug/elf"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/bwrapkit/bwrapkit/locate"
)

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
	Entries  []locate.PathEntry // file first, then parents
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
		entry := locate.PathEntry{Path: current, Mode: info.Mode()}
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
