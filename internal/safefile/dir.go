package safefile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// tempPrefix starts every temp file's name: hidden, and recognisable as bwrapkit's.
const tempPrefix = ".bwrapkit-tmp-"

// Dir is a directory resolved once. Every later name is looked up in it with *at calls
// on its descriptor, so renaming or replacing the path (or any parent of it) by a symlink
// after OpenDir cannot move where a file lands.
type Dir struct {
	fd   int
	path string
}

// OpenDir resolves path, following symlinks as the caller wrote them, now: what it names
// at this moment is where Dir's files go.
func OpenDir(path string) (*Dir, error) {
	// O_DIRECTORY is checked before any FIFO or device open would run, so a planted FIFO
	// fails at once with ENOTDIR.
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOTDIR) {
		if info, lerr := os.Lstat(path); lerr == nil && !info.IsDir() {
			return nil, &Error{Path: path, Kind: KindNotDirectory}
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &Dir{fd: fd, path: path}, nil
}

// Path is the path the directory was opened by (for messages; never opened again).
func (d *Dir) Path() string { return d.path }

// Close releases the directory.
func (d *Dir) Close() error { return unix.Close(d.fd) }

func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return &Error{Path: name, Kind: KindBadName}
	}
	return nil
}

// WriteFile places data at name in d atomically, mode perm, owned by the caller: an
// O_EXCL temp file, fsync, renameat over name, fsync of d. A symlink, FIFO or device
// planted at name is replaced, never followed or opened; a directory there is an error.
func (d *Dir) WriteFile(name string, data []byte, perm os.FileMode) (err error) {
	if err := checkName(name); err != nil {
		return err
	}
	full := filepath.Join(d.path, name)
	temp, fd, err := d.createTemp()
	if err != nil {
		return &fs.PathError{Op: "create", Path: full, Err: err}
	}
	defer func() {
		if fd >= 0 {
			unix.Close(fd)
		}
		if err != nil {
			unix.Unlinkat(d.fd, temp, 0)
		}
	}()
	for written := 0; written < len(data); {
		n, werr := unix.Write(fd, data[written:])
		if werr != nil && !errors.Is(werr, unix.EINTR) {
			return &fs.PathError{Op: "write", Path: full, Err: werr}
		}
		written += max(n, 0)
	}
	// Fchmod, not the open's mode: the umask must not loosen or tighten what the caller asked.
	if err := unix.Fchmod(fd, uint32(perm.Perm())); err != nil {
		return &fs.PathError{Op: "chmod", Path: full, Err: err}
	}
	if err := unix.Fsync(fd); err != nil {
		return &fs.PathError{Op: "sync", Path: full, Err: err}
	}
	closeErr := unix.Close(fd)
	fd = -1
	if closeErr != nil {
		return &fs.PathError{Op: "close", Path: full, Err: closeErr}
	}
	if err := unix.Renameat(d.fd, temp, d.fd, name); err != nil {
		if errors.Is(err, unix.EISDIR) {
			return &Error{Path: full, Kind: KindDirectory}
		}
		return &fs.PathError{Op: "rename", Path: full, Err: err}
	}
	// The rename is durable only once the directory is synced; some file systems cannot
	// sync a directory, and the rename is then as durable as they allow.
	if err := unix.Fsync(d.fd); err != nil && !errors.Is(err, unix.EINVAL) {
		return &fs.PathError{Op: "sync", Path: d.path, Err: err}
	}
	return nil
}

// IsDirectory reports whether name in d is a directory (never following a symlink).
func (d *Dir) IsDirectory(name string) bool {
	var stat unix.Stat_t
	return unix.Fstatat(d.fd, name, &stat, unix.AT_SYMLINK_NOFOLLOW) == nil && stat.Mode&unix.S_IFMT == unix.S_IFDIR
}

// CheckWritable proves the caller can create a file in d: it creates an O_EXCL temp file
// and removes it.
func (d *Dir) CheckWritable() error {
	temp, fd, err := d.createTemp()
	if err != nil {
		return fmt.Errorf("cannot create a file in %s: %w", d.path, err)
	}
	unix.Close(fd)
	if err := unix.Unlinkat(d.fd, temp, 0); err != nil {
		return fmt.Errorf("cannot remove a file from %s: %w", d.path, err)
	}
	return nil
}

// createTemp makes a new file no other process can have opened: O_EXCL, a random name,
// O_NOFOLLOW, mode 0600 until the caller's mode is set.
func (d *Dir) createTemp() (string, int, error) {
	for range 10 {
		var random [8]byte
		rand.Read(random[:])
		name := tempPrefix + hex.EncodeToString(random[:])
		fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		return name, fd, err
	}
	return "", -1, errors.New("ten random temp names were taken")
}

// WriteFile places data at path atomically: OpenDir of path's directory, then Dir.WriteFile.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := checkName(name); err != nil {
		return &Error{Path: path, Kind: KindBadName}
	}
	d, err := OpenDir(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.WriteFile(name, data, perm)
}
