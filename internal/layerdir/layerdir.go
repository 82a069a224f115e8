// Package layerdir locks and removes the directories an overlay mount writes: an upper
// layer and its work directory. A layer in use is held by an flock on its directory (the
// kernel lets it go with the process that held it), and removed once no mount uses it.
// overlayfs leaves work/work with mode 0, and a sandboxed command can leave directories
// it may not read back; links are never followed.
package layerdir

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Open opens dir to lock it, never through a symlink.
func Open(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// TryLock opens dir (never through a symlink) and locks it exclusively without waiting:
// an error when another process holds it (EWOULDBLOCK) or it cannot be opened. Closing
// the file lets the lock go.
func TryLock(dir string) (*os.File, error) {
	lock, err := Open(dir)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return nil, &os.PathError{Op: "flock", Path: dir, Err: err}
	}
	return lock, nil
}

// Remove removes dir and everything in it; what stands in the way is made searchable
// and writable by its owner (the caller) first.
func Remove(dir string) error {
	_ = os.Chmod(filepath.Join(dir, "work", "work"), 0o700)
	if os.RemoveAll(dir) == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(path string, entry os.DirEntry, err error) error {
		// A directory the walk could not read (err) or will enter: opened up. WalkDir
		// reports a link as a link, so no link's target is changed.
		if err != nil || entry.IsDir() {
			_ = os.Chmod(path, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
