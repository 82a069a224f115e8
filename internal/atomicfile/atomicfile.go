// Package atomicfile writes an output file a user named on the command line (doctor
// --output, doctor --fix's files): a file is replaced atomically through safefile, a stream
// (/dev/stdout, a pipe, a terminal, /dev/null) is written in place as a shell's > would.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/internal/safefile"
)

// Write puts data at path, mode perm.
//
//   - /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N are this process's own
//     descriptors: data is written to a duplicate of that descriptor, no path is opened.
//   - A FIFO, /dev/null or a terminal at path itself is written in place:
//     renaming over it would destroy it (as root, /dev/null itself) and atomicity means
//     nothing for a stream. A FIFO with no reader is an error at once, never a wait.
//   - Anything else is safefile.WriteFile: an O_EXCL temp file renamed over the name. A
//     symlink at the name is replaced, never followed, so a link planted where an output
//     goes cannot redirect the write. Any other device (a disk), a socket and a directory
//     are refused.
//
// On any failure the target is untouched and no temp file is left.
func Write(path string, data []byte, perm os.FileMode) error {
	if fd, ok := ownDescriptor(path); ok {
		return writeDescriptor(path, fd, data)
	}
	var stat unix.Stat_t
	switch err := unix.Lstat(path, &stat); {
	case errors.Is(err, unix.ENOENT):
		return safefile.WriteFile(path, data, perm)
	case err != nil:
		return &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	switch {
	case stat.Mode&unix.S_IFMT == unix.S_IFDIR:
		return &safefile.Error{Path: path, Kind: safefile.KindDirectory}
	case isStream(stat):
		return writeInPlace(path, data)
	case stat.Mode&unix.S_IFMT == unix.S_IFCHR || stat.Mode&unix.S_IFMT == unix.S_IFBLK:
		return &safefile.Error{Path: path, Kind: safefile.KindDevice}
	case stat.Mode&unix.S_IFMT == unix.S_IFSOCK:
		// open(2) cannot write a socket, and renaming over it would destroy a listener's name.
		return &safefile.Error{Path: path, Kind: safefile.KindSocket}
	}
	return safefile.WriteFile(path, data, perm)
}

// ownDescriptor recognises the names of this process's descriptors. A sandboxed command
// cannot plant these: they are the kernel's and devtmpfs's, on the host.
func ownDescriptor(path string) (int, bool) {
	switch clean := filepath.Clean(path); clean {
	case "/dev/stdout":
		return 1, true
	case "/dev/stderr":
		return 2, true
	default:
		for _, prefix := range []string{"/dev/fd/", "/proc/self/fd/"} {
			if number, found := strings.CutPrefix(clean, prefix); found {
				fd, err := strconv.Atoi(number)
				return fd, err == nil && fd >= 0 && strconv.Itoa(fd) == number
			}
		}
	}
	return 0, false
}

func writeDescriptor(path string, fd int, data []byte) error {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "dup", Path: path, Err: err}
	}
	file := os.NewFile(uintptr(dup), path)
	if _, err := file.Write(data); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

// isStream reports whether a file is written as a stream rather than replaced: a FIFO,
// /dev/null (1:3), or a terminal (ttys 4, /dev/tty and console 5, ptys 136-143).
func isStream(stat unix.Stat_t) bool {
	switch stat.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return true
	case unix.S_IFCHR:
		major, minor := unix.Major(stat.Rdev), unix.Minor(stat.Rdev)
		return (major == 1 && minor == 3) || major == 4 || (major == 5 && minor <= 1) || (major >= 136 && major <= 143)
	}
	return false
}

// writeInPlace writes to a stream, as a shell's > would. O_NONBLOCK makes a FIFO with no
// reader fail at once (ENXIO) instead of waiting; the descriptor is checked again after
// the open, so a name swapped for another file meanwhile is refused before any write.
func writeInPlace(path string, data []byte) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("%s is a FIFO with no reader (start the reader first, or name a regular file)", path)
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var stat unix.Stat_t
	if err := unix.Fstat(fd, &stat); err != nil || !isStream(stat) {
		unix.Close(fd)
		return &fs.PathError{Op: "open", Path: path, Err: errors.New("replaced while it was being opened")}
	}
	// The reader exists: from here a write waits for it as any pipe writer does.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	file := os.NewFile(uintptr(fd), path)
	if _, err := file.Write(data); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}
