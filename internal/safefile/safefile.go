// Package safefile is the one way bwrapkit opens host files that a sandboxed command or
// another user could have planted: no symlink followed at the name, no FIFO blocked on.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"runtime/debug"
	"strconv"

	"golang.org/x/sys/unix"
)

// Kind is what was found where a regular file (or a directory, for OpenDir) was expected.
type Kind string

const (
	KindSymlink      Kind = "symlink"
	KindFIFO         Kind = "fifo"
	KindDevice       Kind = "device"
	KindSocket       Kind = "socket"
	KindDirectory    Kind = "directory"
	KindNotDirectory Kind = "not-directory"
	KindTooLarge     Kind = "too-large"
	KindBadName      Kind = "bad-name"
)

// Error says path is not what bwrapkit may read or write there. Limit is set for
// KindTooLarge.
type Error struct {
	Path  string
	Kind  Kind
	Limit int64
}

func (e *Error) Error() string {
	switch e.Kind {
	case KindSymlink:
		return e.Path + " is a symbolic link, which bwrapkit never follows here (name the file it points to)"
	case KindFIFO:
		return e.Path + " is a FIFO, not a regular file (reading it could block forever; name a regular file)"
	case KindDevice:
		return e.Path + " is a device, not a regular file (name a regular file)"
	case KindSocket:
		return e.Path + " is a socket, not a regular file (name a regular file)"
	case KindDirectory:
		return e.Path + " is a directory, not a regular file (name a file inside it)"
	case KindNotDirectory:
		return e.Path + " is not a directory (name an existing directory)"
	case KindTooLarge:
		return fmt.Sprintf("%s is larger than the %d bytes allowed (name a smaller file)", e.Path, e.Limit)
	case KindBadName:
		return fmt.Sprintf("%q is not a single file name (no slash, not . or ..)", e.Path)
	}
	return e.Path + ": " + string(e.Kind)
}

// kindOf names a non-regular file type from its stat mode; "" for a regular file.
func kindOf(mode uint32) Kind {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return ""
	case unix.S_IFLNK:
		return KindSymlink
	case unix.S_IFIFO:
		return KindFIFO
	case unix.S_IFCHR, unix.S_IFBLK:
		return KindDevice
	case unix.S_IFSOCK:
		return KindSocket
	case unix.S_IFDIR:
		return KindDirectory
	}
	return KindDevice
}

// Open opens path for reading. A symlink in the last component is refused, not followed,
// and anything but a regular file is refused before it is opened for reading: the name is
// first opened O_PATH (which opens nothing, so neither blocks on a FIFO nor runs a device
// driver's open, such as a watchdog's), checked with fstat, and only then reopened for
// reading through /proc/self/fd, which reaches that very inode and no other.
func Open(path string) (*os.File, error) {
	pathFD, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(pathFD)
	var want unix.Stat_t
	if err := unix.Fstat(pathFD, &want); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if kind := kindOf(want.Mode); kind != "" {
		return nil, &Error{Path: path, Kind: kind}
	}
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pathFD), flags, 0)
	if errors.Is(err, unix.ENOENT) {
		// No /proc (a minimal chroot): open the name again and prove below it is the
		// inode checked. O_NONBLOCK keeps a FIFO swapped in meanwhile from blocking.
		fd, err = unix.Open(path, flags|unix.O_NOFOLLOW, 0)
		if errors.Is(err, unix.ELOOP) {
			return nil, &Error{Path: path, Kind: KindSymlink}
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var got unix.Stat_t
	if err := unix.Fstat(fd, &got); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if got.Dev != want.Dev || got.Ino != want.Ino {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("replaced while it was being opened")}
	}
	// Reads of a regular file ignore O_NONBLOCK, but a caller handing the file on (a
	// child's stdin) must get an ordinary descriptor.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// ReadFile is Open plus a read of at most limit bytes; a larger file is a KindTooLarge error
// and nothing of it is returned.
func ReadFile(path string, limit int64) ([]byte, error) {
	file, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	limit = max(limit, 0)
	ceiling := limit // the most a read may take: limit+1, to see a larger file is larger
	if ceiling < math.MaxInt {
		ceiling++
	}
	size := int64(512)
	if info, err := file.Stat(); err == nil {
		if info.Size() > limit {
			return nil, &Error{Path: path, Kind: KindTooLarge, Limit: limit}
		}
		size = max(size, info.Size()+1) // +1: room for the read that finds the end
	}
	// Read as os.ReadFile reads (one read for a file whose size fstat saw, not a dozen
	// growing ones for a git index), but never past limit: the file may grow after the fstat.
	data := make([]byte, 0, min(size, ceiling))
	for {
		n, err := file.Read(data[len(data):min(int64(cap(data)), ceiling)])
		data = data[:len(data)+n]
		switch {
		case int64(len(data)) > limit:
			return nil, &Error{Path: path, Kind: KindTooLarge, Limit: limit}
		case err == io.EOF:
			return data, nil
		case err != nil:
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		case len(data) == cap(data):
			data = append(data, 0)[:len(data)]
		}
	}
}

// Mapped calls fn with the bytes of the file at path (opened as Open opens it), mapped
// read-only rather than read: a git index of a large repository is megabytes, and a
// read copies them into fresh memory whose page faults cost more than the parse (8 MB:
// 3.6 ms of a run's 13). data is valid only during the call. A file larger than limit
// is a KindTooLarge error. Where the file cannot be mapped (a file system without
// mmap), it is read instead. A file that shrinks during the call (another process
// truncating it) faults on a page past its new end: that ends fn with an error, not the
// program.
func Mapped(path string, limit int64, fn func(data []byte) error) (err error) {
	file, err := Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return err
	}
	switch size := info.Size(); {
	case size > max(limit, 0):
		return &Error{Path: path, Kind: KindTooLarge, Limit: limit}
	case size == 0 || size > math.MaxInt:
		return readThenCall(path, limit, fn)
	}
	data, err := unix.Mmap(int(file.Fd()), 0, int(info.Size()), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return readThenCall(path, limit, fn)
	}
	defer unix.Munmap(data)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recovered := recover(); recovered != nil {
			if _, fault := recovered.(interface{ Addr() uintptr }); !fault {
				panic(recovered)
			}
			err = &fs.PathError{Op: "read", Path: path, Err: errors.New("the file shrank while it was read")}
		}
	}()
	return fn(data)
}

// readThenCall is Mapped's way for a file it cannot map: ReadFile, then fn.
func readThenCall(path string, limit int64, fn func(data []byte) error) error {
	data, err := ReadFile(path, limit)
	if err != nil {
		return err
	}
	return fn(data)
}
