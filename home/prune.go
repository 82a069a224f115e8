package home

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrInUse is a HOME a run took between the listing and its removal: it is kept.
var ErrInUse = errors.New("in use by a run: kept")

// Remove deletes one HOME and its record while holding the HOME's exclusive lock, so no
// run can start in it meanwhile. Nothing is followed: the HOME is opened O_NOFOLLOW,
// every directory below is made writable through a descriptor opened O_NOFOLLOW (Go's
// module cache is read-only, and so may be anything a command made), and RemoveAll
// unlinks links instead of entering them.
func Remove(home string) error {
	fd, err := unix.Open(home, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", home, err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fmt.Errorf("%s: %w", home, ErrInUse)
	}
	if !ownDir(home) {
		return fmt.Errorf("%s: not a directory of yours: kept", home)
	}
	openUp(fd)
	if err := os.RemoveAll(home); err != nil {
		return fmt.Errorf("%s: %w", home, err)
	}
	if err := removeLayers(home + LayersSuffix); err != nil {
		return fmt.Errorf("%s: %w", home+LayersSuffix, err)
	}
	if err := os.Remove(home + RecordSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: %w", home+RecordSuffix, err)
	}
	return nil
}

// openUp gives the owner rwx on the directory dirFD and every directory below it,
// reaching each through openat(O_NOFOLLOW|O_DIRECTORY) on its parent's descriptor: a
// name swapped for a link is refused by the kernel, never followed. A directory its
// owner cannot read (mode 0000) is first opened O_PATH, which needs no permission, and
// changed through /proc/self/fd, which names that very inode.
func openUp(dirFD int) {
	unix.Fchmod(dirFD, 0o700)
	dup, err := unix.Dup(dirFD)
	if err != nil {
		return
	}
	listing := os.NewFile(uintptr(dup), "") // closing it leaves dirFD open
	defer listing.Close()
	entries, err := listing.ReadDir(-1)
	if err != nil {
		return
	}
	const flags = unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	for _, entry := range entries {
		if !entry.IsDir() {
			continue
		}
		if path, err := unix.Openat(dirFD, entry.Name(), unix.O_PATH|flags, 0); err == nil {
			unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", path), 0o700)
			unix.Close(path)
		}
		child, err := unix.Openat(dirFD, entry.Name(), unix.O_RDONLY|flags, 0)
		if err != nil {
			continue
		}
		openUp(child)
		unix.Close(child)
	}
}

// InRoot: home lies directly in one of the roots, as every HOME List returns does.
func InRoot(home string, roots []string) bool {
	for _, root := range roots {
		if filepath.Dir(home) == filepath.Clean(root) {
			return true
		}
	}
	return false
}

// removeLayers removes a HOME's cache layers as Remove removes the HOME (under its lock).
// overlayfs leaves its work directory's "work" subdirectory mode 0000: openUp opens it.
func removeLayers(layers string) error {
	fd, err := unix.Open(layers, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if !ownDir(layers) {
		return errors.New("not a directory of yours: kept")
	}
	openUp(fd)
	return os.RemoveAll(layers)
}
