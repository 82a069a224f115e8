package land

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// Bounds stop a layer that is bad input (a command that made a million empty files, a
// tree thousands deep) before anything lands: the walk fails whole, with a clear error.
type Bounds struct {
	Entries int // most entries a layer may hold
	Depth   int // deepest directory nesting
}

// DefaultBounds hold any real build (a node_modules of 100,000 files walks in well under
// a second) and refuse what is plainly an attack on bwrapkit itself.
func DefaultBounds() Bounds { return Bounds{Entries: 250_000, Depth: 200} }

// BoundsError is a layer too large or too deep to vet; nothing was landed.
type BoundsError struct {
	What  string
	Limit int
}

func (e *BoundsError) Error() string {
	return fmt.Sprintf("the command's changes exceed %d %s, more than bwrapkit vets; nothing was landed", e.Limit, e.What)
}

// beneath opens relative paths without following any symlink or leaving the directory.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

func openBeneath(dirFD int, rel string, flags uint64) (int, error) {
	if rel == "" {
		rel = "."
	}
	for {
		fd, err := unix.Openat2(dirFD, rel, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: beneath})
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return fd, err
	}
}

// Walk lists every change the upper layer (upperFD) makes to the project (projectFD),
// parents before children, each with the project's entry at its path.
func Walk(upperFD, projectFD int, bounds Bounds) ([]Entry, error) {
	w := walker{upper: upperFD, project: projectFD, bounds: bounds}
	root, err := w.entry(upperFD, "", "", false, -1)
	if err != nil {
		return nil, err
	}
	root.Path = ""
	w.entries = append(w.entries, root)
	if err := w.dir(upperFD, "", 1, root.Opaque, false); err != nil {
		return nil, err
	}
	return w.entries, nil
}

type walker struct {
	upper, project int
	bounds         Bounds
	entries        []Entry
}

// dir walks one directory of the layer. fresh: the project has no directory there, so
// nothing below it has a project side (no lookups, no overlay attributes to read).
func (w *walker) dir(dirFD int, rel string, depth int, opaque, fresh bool) error {
	if depth > w.bounds.Depth {
		return &BoundsError{What: "directory levels", Limit: w.bounds.Depth}
	}
	names, err := readNames(dirFD)
	if err != nil {
		return fmt.Errorf("reading the layer at %s: %w", orRoot(rel), err)
	}
	slices.Sort(names)
	// The project's directory here, opened once for all its entries' lookups (-1: none
	// there, or not a plain directory, so every entry below is new).
	projectDir := -1
	if !fresh {
		if projectDir, err = w.projectDir(rel); err != nil {
			return err
		}
		if projectDir >= 0 {
			defer unix.Close(projectDir)
		}
	}
	for _, name := range names {
		if len(w.entries) >= w.bounds.Entries {
			return &BoundsError{What: "entries", Limit: w.bounds.Entries}
		}
		path := join(rel, name)
		entry, err := w.entry(dirFD, name, path, fresh, projectDir)
		if err != nil {
			return err
		}
		w.entries = append(w.entries, entry)
		if entry.Kind == KindDir {
			child, err := unix.Openat(dirFD, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("opening the layer at %s: %w", path, err)
			}
			err = w.dir(child, path, depth+1, entry.Opaque || entry.Lower.Kind != KindDir, entry.Lower.Kind != KindDir)
			unix.Close(child)
			if err != nil {
				return err
			}
		}
	}
	if opaque && !fresh && rel != "" {
		return w.dropped(rel, names)
	}
	return nil
}

// dropped adds the project entries an opaque directory no longer shows: deletions.
func (w *walker) dropped(rel string, kept []string) error {
	fd, err := openBeneath(w.project, rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return nil // nothing there to drop
	}
	if err != nil {
		return fmt.Errorf("reading the project at %s: %w", rel, err)
	}
	defer unix.Close(fd)
	names, err := readNames(fd)
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, name := range names {
		if slices.Contains(kept, name) {
			continue
		}
		if len(w.entries) >= w.bounds.Entries {
			return &BoundsError{What: "entries", Limit: w.bounds.Entries}
		}
		path := join(rel, name)
		lower, err := w.lower(path)
		if err != nil {
			return err
		}
		w.entries = append(w.entries, Entry{Path: path, Kind: KindWhiteout, Deleted: true, Lower: lower})
	}
	return nil
}

// entry inspects name in the layer's dirFD; projectDir is the project's directory at the
// same place (-1: none), where its counterpart is looked up.
func (w *walker) entry(dirFD int, name, path string, fresh bool, projectDir int) (Entry, error) {
	var stat unix.Stat_t
	if name == "" {
		if err := unix.Fstat(dirFD, &stat); err != nil {
			return Entry{}, err
		}
	} else if err := unix.Fstatat(dirFD, name, &stat, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Entry{}, fmt.Errorf("inspecting the layer at %s: %w", path, err)
	}
	entry := Entry{Path: path, Mode: stat.Mode & 0o7777, Gid: stat.Gid, Nlink: uint64(stat.Nlink), Size: stat.Size}
	switch stat.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		// Metacopy and xattr whiteouts only refer to a lower entry: none below a new directory.
		entry.Kind = KindFile
		entry.Data = stat.Size
		if stat.Blocks*512 < stat.Size { // holes, or a file system that compresses
			entry.Data = dataBytes(dirFD, name, stat.Size)
		}
		if !fresh {
			attrs, err := xattrNames(dirFD, name)
			if err != nil {
				return Entry{}, fmt.Errorf("inspecting the layer at %s: %w", path, err)
			}
			entry.Metacopy = slices.Contains(attrs, "user.overlay.metacopy") || slices.Contains(attrs, "trusted.overlay.metacopy")
			if slices.Contains(attrs, "user.overlay.whiteout") {
				entry.Kind = KindWhiteout
			}
		}
	case unix.S_IFDIR:
		entry.Kind = KindDir
		if !fresh {
			attrs, err := xattrNames(dirFD, name)
			if err != nil {
				return Entry{}, fmt.Errorf("inspecting the layer at %s: %w", path, err)
			}
			for _, attr := range []string{"user.overlay.opaque", "trusted.overlay.opaque"} {
				entry.Opaque = entry.Opaque || slices.Contains(attrs, attr) && xattrIs(dirFD, name, attr, "y")
			}
		}
	case unix.S_IFLNK:
		entry.Kind = KindSymlink
		target, err := readlinkat(dirFD, name)
		if err != nil {
			return Entry{}, fmt.Errorf("reading the layer's symlink %s: %w", path, err)
		}
		entry.Target = target
	case unix.S_IFCHR:
		entry.Kind = KindSpecial
		if stat.Rdev == 0 {
			entry.Kind = KindWhiteout
		}
	default:
		entry.Kind = KindSpecial
	}
	var err error
	entry.Lower = Lower{Kind: KindAbsent}
	switch {
	case fresh:
	case name == "":
		if entry.Lower, err = w.lower(path); err != nil {
			return Entry{}, err
		}
	case projectDir >= 0:
		if entry.Lower, err = lowerAt(projectDir, name, path); err != nil {
			return Entry{}, err
		}
	}
	lower := entry.Lower
	if entry.Kind == KindFile && lower.Kind == KindFile && entry.Mode == lower.Mode && !entry.Metacopy {
		if entry.Same, err = w.sameContent(dirFD, name, path, entry.Size); err != nil {
			return Entry{}, err
		}
	}
	return entry, nil
}

// lower is the project's entry at path, never through a symlink.
func (w *walker) lower(path string) (Lower, error) {
	if path == "" {
		var stat unix.Stat_t
		if err := unix.Fstat(w.project, &stat); err != nil {
			return Lower{}, err
		}
		return lowerOf(stat), nil
	}
	parent, name := split(path)
	fd, err := w.projectDir(parent)
	if err != nil || fd < 0 {
		return Lower{Kind: KindAbsent}, err
	}
	defer unix.Close(fd)
	return lowerAt(fd, name, path)
}

// projectDir opens the project's directory at rel, never through a symlink: -1 when it
// is gone or not a plain directory (then nothing below it has a project side).
func (w *walker) projectDir(rel string) (int, error) {
	fd, err := openBeneath(w.project, rel, unix.O_PATH|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("inspecting the project at %s: %w", orRoot(rel), err)
	}
	return fd, nil
}

// lowerAt is the project's entry name in its directory dirFD.
func lowerAt(dirFD int, name, path string) (Lower, error) {
	var stat unix.Stat_t
	if err := unix.Fstatat(dirFD, name, &stat, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
		return Lower{Kind: KindAbsent}, nil
	} else if err != nil {
		return Lower{}, fmt.Errorf("inspecting the project at %s: %w", path, err)
	}
	return lowerOf(stat), nil
}

func lowerOf(stat unix.Stat_t) Lower {
	kind := KindSpecial
	switch stat.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		kind = KindFile
	case unix.S_IFDIR:
		kind = KindDir
	case unix.S_IFLNK:
		kind = KindSymlink
	}
	return Lower{Kind: kind, Mode: stat.Mode & 0o7777, Uid: stat.Uid, Gid: stat.Gid, ChangedNS: stat.Ctim.Nano()}
}

// sameContent compares a copied-up file with the project's, byte for byte.
func (w *walker) sameContent(dirFD int, name, path string, size int64) (bool, error) {
	theirs, err := openBeneath(w.project, path, unix.O_RDONLY)
	if err != nil {
		return false, nil // unreadable or gone: land it, the conflict rule sees a change
	}
	project := os.NewFile(uintptr(theirs), path)
	defer project.Close()
	if info, err := project.Stat(); err != nil || info.Size() != size {
		return false, nil
	}
	ours, err := unix.Openat(dirFD, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("reading the layer at %s: %w", path, err)
	}
	layer := os.NewFile(uintptr(ours), path)
	defer layer.Close()
	return sameReaders(layer, project)
}

func sameReaders(a, b io.Reader) (bool, error) {
	bufA, bufB := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		n, errA := io.ReadFull(a, bufA)
		m, errB := io.ReadFull(b, bufB)
		if n != m || !bytes.Equal(bufA[:n], bufB[:m]) {
			return false, nil
		}
		if errA == io.EOF || errA == io.ErrUnexpectedEOF {
			return errB == io.EOF || errB == io.ErrUnexpectedEOF, nil
		}
		if errA != nil {
			return false, errA
		}
		if errB != nil {
			return false, nil
		}
	}
}

func readNames(dirFD int) ([]string, error) {
	fd, err := unix.Openat(dirFD, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	dir := os.NewFile(uintptr(fd), "dir")
	defer dir.Close()
	return dir.Readdirnames(-1)
}

func readlinkat(dirFD int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dirFD, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// xattr reads name's attribute without following a symlink (through /proc/self/fd, as
// the *at xattr calls are new). A missing attribute is "".
func xattr(dirFD int, name, attr string) string {
	buf := make([]byte, 256)
	path := fmt.Sprintf("/proc/self/fd/%d", dirFD)
	if name != "" {
		path += "/" + name
	}
	n, err := unix.Lgetxattr(path, attr, buf)
	if err != nil || n < 0 {
		return ""
	}
	return string(buf[:n])
}

// xattrNames lists name's extended attributes without following a symlink (one call:
// a file's three overlay markers are then looked up in the list, not asked for one by
// one). Unsupported attributes are an empty list.
func xattrNames(dirFD int, name string) ([]string, error) {
	path := fmt.Sprintf("/proc/self/fd/%d", dirFD)
	if name != "" {
		path += "/" + name
	}
	buf := make([]byte, 256)
	for {
		n, err := unix.Llistxattr(path, buf)
		switch {
		case errors.Is(err, unix.ERANGE) && len(buf) < 1<<16:
			buf = make([]byte, 4*len(buf))
			continue
		case errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP):
			return nil, nil
		case err != nil:
			return nil, err
		}
		var names []string
		for _, attr := range bytes.Split(buf[:n], []byte{0}) {
			if len(attr) > 0 {
				names = append(names, string(attr))
			}
		}
		return names, nil
	}
}

func xattrIs(dirFD int, name, attr, want string) bool { return xattr(dirFD, name, attr) == want }

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func split(path string) (dir, name string) {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[:i], path[i+1:]
		}
	}
	return "", path
}

func orRoot(rel string) string {
	if rel == "" {
		return "the project's top"
	}
	return rel
}

// dataBytes is how much of name's size its data extents cover (SEEK_DATA, SEEK_HOLE):
// less than size only for holes. A compressing file system reports fewer blocks than
// bytes without any hole, so the blocks alone would undercount what a copy writes. A
// file that cannot be opened counts whole.
func dataBytes(dirFD int, name string, size int64) int64 {
	fd, err := unix.Openat(dirFD, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return size
	}
	defer unix.Close(fd)
	var data int64
	if extents(fd, size, func(start, end int64) error { data += end - start; return nil }) != nil {
		return size
	}
	return data
}

// extents calls visit with each data extent [start, end) of the file open at fd, up to
// size, in order (SEEK_DATA, SEEK_HOLE); the holes between are skipped. A file system
// without SEEK_DATA reports the whole file as one extent. It leaves fd's offset anywhere.
func extents(fd int, size int64, visit func(start, end int64) error) error {
	for offset := int64(0); offset < size; {
		start, err := unix.Seek(fd, offset, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return nil // only a hole from offset to the end
		}
		if err != nil {
			return err
		}
		end, err := unix.Seek(fd, start, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		end = min(end, size) // the file may have grown since its size was read
		if err := visit(start, end); err != nil {
			return err
		}
		offset = end
	}
	return nil
}
