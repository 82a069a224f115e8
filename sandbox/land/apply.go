package land

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Changes counts what landed.
type Changes struct {
	Added    int `json:"added"`
	Modified int `json:"modified"`
	Deleted  int `json:"deleted"`
}

// TempPrefix starts the name of every file the applier writes before renaming it into
// place: a crash leaves at most such a file (the journal names it; the next run removes
// it), never a half-written file at a project name.
const TempPrefix = ".bwrapkit-landing-"

// Applier lands decisions: upper is the layer, project the project's top, journal
// (may be nil) records every temporary name before it is made.
type Applier struct {
	Upper, Project int
	// Rename: layer and project share a file system, so a file moves in one rename.
	Rename bool
	// Chown: give a replaced file its old owner back (the caller is root).
	Chown   bool
	Journal io.Writer

	dirs      map[string]int // project directories opened so far, by relative path
	upperDirs map[string]int // the layer's, likewise: a file's parent is opened once
}

// Apply lands every Apply decision, in order; it stops at the first error, leaving each
// file either as it was or as the command left it.
func (a *Applier) Apply(decisions []Decision) (Changes, error) {
	a.dirs, a.upperDirs = map[string]int{}, map[string]int{}
	defer func() {
		for _, fd := range a.dirs {
			unix.Close(fd)
		}
		for _, fd := range a.upperDirs {
			unix.Close(fd)
		}
	}()
	var changes Changes
	var moved subtree // the last new directory that moved whole
	for _, decision := range decisions {
		entry := decision.Entry
		if moved.holds(entry.Path) {
			if entry.Kind != KindDir {
				changes.Added++
			}
			continue
		}
		if decision.Action != Apply {
			continue
		}
		if err := a.one(decision); err != nil {
			return changes, fmt.Errorf("landing %s: %w", orRoot(entry.Path), err)
		}
		if decision.Whole && a.Rename {
			moved = subtree{entry.Path}
		}
		switch {
		case entry.Kind == KindWhiteout:
			changes.Deleted++
		case entry.Kind == KindDir && entry.Lower.Kind == KindDir:
			// a mode change of a directory is not counted as a file change
		case entry.Kind == KindDir:
		case entry.Lower.Kind == KindAbsent:
			changes.Added++
		default:
			changes.Modified++
		}
	}
	return changes, nil
}

func (a *Applier) one(decision Decision) error {
	entry := decision.Entry
	if entry.Path == "" {
		return a.chmodTop(entry.Mode)
	}
	parentRel, name := split(entry.Path)
	parent, err := a.projectDir(parentRel)
	if err != nil {
		return err
	}
	switch entry.Kind {
	case KindWhiteout:
		return removeTree(parent, name)
	case KindDir:
		if entry.Lower.Kind == KindDir {
			return unix.Fchmodat(parent, name, entry.Mode, 0)
		}
		if entry.Lower.Kind != KindAbsent {
			if err := removeTree(parent, name); err != nil {
				return err
			}
		}
		if decision.Whole && a.Rename {
			upperParent, err := a.upperDir(parentRel)
			if err != nil {
				return err
			}
			return unix.Renameat2(upperParent, name, parent, name, unix.RENAME_NOREPLACE)
		}
		if err := unix.Mkdirat(parent, name, 0o700); err != nil {
			return err
		}
		return unix.Fchmodat(parent, name, entry.Mode, 0)
	case KindSymlink:
		temp := TempPrefix + randomName()
		if err := a.journal(entry.Path, temp); err != nil {
			return err
		}
		if err := unix.Symlinkat(entry.Target, parent, temp); err != nil {
			return err
		}
		return a.replace(parent, temp, name, entry)
	case KindFile:
		upperParent, err := a.upperDir(parentRel)
		if err != nil {
			return err
		}
		if a.Rename && entry.Nlink == 1 {
			if entry.Lower.Kind == KindDir {
				if err := removeTree(parent, name); err != nil {
					return err
				}
			}
			// rename(2) replaces the project's file in one step: a reader sees the old
			// file or the new one, never a mix. It never follows a link at the name.
			if err := unix.Renameat(upperParent, name, parent, name); err != nil {
				return err
			}
			return a.keepOwner(parent, name, entry)
		}
		temp := TempPrefix + randomName()
		if err := a.journal(entry.Path, temp); err != nil {
			return err
		}
		if err := copyFile(upperParent, name, parent, temp, entry.Mode); err != nil {
			_ = unix.Unlinkat(parent, temp, 0)
			return err
		}
		return a.replace(parent, temp, name, entry)
	}
	return fmt.Errorf("cannot land a %s", entry.Kind)
}

// replace renames temp over name (removing a directory there first).
func (a *Applier) replace(parent int, temp, name string, entry Entry) error {
	if entry.Lower.Kind == KindDir {
		if err := removeTree(parent, name); err != nil {
			_ = unix.Unlinkat(parent, temp, 0)
			return err
		}
	}
	if err := unix.Renameat(parent, temp, parent, name); err != nil {
		_ = unix.Unlinkat(parent, temp, 0)
		return err
	}
	return a.keepOwner(parent, name, entry)
}

func (a *Applier) keepOwner(parent int, name string, entry Entry) error {
	if !a.Chown || entry.Lower.Kind == KindAbsent || entry.Lower.Kind == KindDir {
		return nil
	}
	return unix.Fchownat(parent, name, int(entry.Lower.Uid), int(entry.Lower.Gid), unix.AT_SYMLINK_NOFOLLOW)
}

func (a *Applier) chmodTop(mode uint32) error {
	fd, err := openBeneath(a.Project, "", unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fchmod(fd, mode)
}

// upperDir opens a directory of the layer beneath its top, never through a symlink.
func (a *Applier) upperDir(rel string) (int, error) {
	if fd, ok := a.upperDirs[rel]; ok {
		return fd, nil
	}
	fd, err := openBeneath(a.Upper, rel, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return -1, err
	}
	a.upperDirs = keepAtMost(a.upperDirs, openDirsKept)
	a.upperDirs[rel] = fd
	return fd, nil
}

// openDirsKept bounds the directories the applier keeps open per tree: a layer of a
// hundred thousand directories must not run bwrapkit out of descriptors midway.
const openDirsKept = 1024

// keepAtMost closes every descriptor of dirs once it holds limit (entries arrive in
// walk order, so the ones still wanted are opened again at most once).
func keepAtMost(dirs map[string]int, limit int) map[string]int {
	if len(dirs) < limit {
		return dirs
	}
	for _, fd := range dirs {
		unix.Close(fd)
	}
	return map[string]int{}
}

// projectDir opens a project directory beneath the top, never through a symlink.
func (a *Applier) projectDir(rel string) (int, error) {
	if fd, ok := a.dirs[rel]; ok {
		return fd, nil
	}
	fd, err := openBeneath(a.Project, rel, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return -1, fmt.Errorf("the project's directory %s cannot be opened without following a link: %w", orRoot(rel), err)
	}
	a.dirs = keepAtMost(a.dirs, openDirsKept)
	a.dirs[rel] = fd
	return fd, nil
}

func (a *Applier) journal(path, temp string) error {
	if a.Journal == nil {
		return nil
	}
	_, err := fmt.Fprintf(a.Journal, "%s\x00%s\n", path, temp)
	return err
}

// copyFile writes a new file temp in dst with src's bytes, flushed before it is renamed.
// A sparse file's holes stay holes: the room check counts what the file occupies, and a
// command's 1 GB of nothing must not become 1 GB written per name it gave the file.
func copyFile(srcDir int, srcName string, dstDir int, temp string, mode uint32) error {
	in, err := unix.Openat(srcDir, srcName, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	source := os.NewFile(uintptr(in), srcName)
	defer source.Close()
	out, err := unix.Openat(dstDir, temp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	target := os.NewFile(uintptr(out), temp)
	defer target.Close()
	if err := copyData(target, source); err != nil {
		return err
	}
	if err := target.Chmod(os.FileMode(mode & 0o777)); err != nil {
		return err
	}
	return target.Sync()
}

// copyData copies source's data extents to the same offsets of the empty target, and
// sizes target as source: the holes between extents are left unwritten.
func copyData(target, source *os.File) error {
	info, err := source.Stat()
	if err != nil {
		return err
	}
	err = extents(int(source.Fd()), info.Size(), func(start, end int64) error {
		if _, err := source.Seek(start, io.SeekStart); err != nil {
			return err
		}
		if _, err := target.Seek(start, io.SeekStart); err != nil {
			return err
		}
		_, err := io.CopyN(target, source, end-start)
		return err
	})
	if err != nil {
		return err
	}
	return target.Truncate(info.Size())
}

// removeTree deletes name under parent and everything below it, never following a link.
func removeTree(parent int, name string) error {
	err := unix.Unlinkat(parent, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	names, err := readNames(fd)
	if err != nil {
		unix.Close(fd)
		return err
	}
	for _, child := range names {
		if err := removeTree(fd, child); err != nil {
			unix.Close(fd)
			return err
		}
	}
	unix.Close(fd)
	return unix.Unlinkat(parent, name, unix.AT_REMOVEDIR)
}

func randomName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
