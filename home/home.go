package home

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// RecordSuffix names the file beside each HOME (in the homes' root, which no sandbox can
// reach) that says which project the HOME is for; its mtime is the HOME's last use. The
// record lives outside the HOME because the command can write everything inside it.
const RecordSuffix = ".project"

// Entry is one project HOME.
type Entry struct {
	Path    string    `json:"path"`
	Project string    `json:"project"`         // the workdir it serves; "" when unrecorded
	Gone    bool      `json:"project_missing"` // the project directory no longer exists
	Size    int64     `json:"size_bytes"`      // the space its files and its cache layers take (blocks, links not followed)
	LastUse time.Time `json:"last_use"`        // the last run that used it (else the HOME's own mtime)
	InUse   bool      `json:"in_use"`          // a run holds it now
	// Measured is when Size was measured: now for List, maybe earlier for ListStored,
	// whose Stored says the figure is one an earlier listing stored.
	Measured time.Time `json:"-"`
	Stored   bool      `json:"-"`
}

// List reads every root (missing roots are fine: no run made one yet) and returns
// bwrapkit's HOMEs in them, oldest use first. Only real directories the caller owns are
// HOMEs; links and anything else in a root are never entered.
func List(roots []string) ([]Entry, error) {
	return list(roots, nil)
}

// ListStored is List for a check that runs often (the doctor, every minute on a fleet):
// a HOME's size is its stored figure from an earlier listing where StoredFresh says it
// still stands (Entry.Stored, and Measured says when it was taken), else it is walked now
// and the figure stored in the root for the next listing. It reads only what a size check
// needs: each entry's Project and Gone are left empty (`home ls` reads them, with List).
func ListStored(roots []string, now time.Time, maxAge time.Duration) ([]Entry, error) {
	return list(roots, &storedSizes{now: now, maxAge: maxAge})
}

// storedSizes is how ListStored reuses figures; nil walks every HOME.
type storedSizes struct {
	now    time.Time
	maxAge time.Duration
}

func list(roots []string, stored *storedSizes) ([]Entry, error) {
	var entries []Entry
	for _, root := range roots {
		found, err := listRoot(root, stored)
		if err != nil {
			return nil, err
		}
		entries = append(entries, found...)
	}
	slices.SortFunc(entries, func(a, b Entry) int { return a.LastUse.Compare(b.LastUse) })
	return entries, nil
}

// listRoot lists one root's HOMEs. Everything is looked at relative to the root's and each
// HOME's open descriptor (no path is resolved twice), and a HOME's layers and record are
// looked for only when the root's listing holds them: the doctor lists every HOME on every
// run, so each system call per HOME counts (BenchmarkList).
func listRoot(root string, stored *storedSizes) ([]Entry, error) {
	rootFD, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", root, &fs.PathError{Op: "open", Path: root, Err: err})
	}
	defer unix.Close(rootFD)
	// The root's listing says which names are directories (d_type) with no stat each.
	dirents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", root, err)
	}
	present := make(map[string]bool, len(dirents))
	for _, dirent := range dirents {
		present[dirent.Name()] = true
	}
	var before, after map[string]Stored
	if stored != nil {
		before, after = readSizes(rootFD), map[string]Stored{}
	}
	var entries []Entry
	for _, dirent := range dirents {
		name := dirent.Name()
		if !dirent.IsDir() || strings.HasPrefix(name, ".") || strings.HasSuffix(name, LayersSuffix) {
			continue // a record, a HOME's layers, a link (DirEntry reports links as such), or a temp file
		}
		stat, ok := ownDirAt(rootFD, name)
		if !ok {
			continue // another user's directory, or gone
		}
		path := filepath.Join(root, name)
		entry := Entry{Path: path, LastUse: time.Unix(stat.Mtim.Unix())}
		changed := time.Unix(stat.Mtim.Unix())
		if present[name+RecordSuffix] && stored != nil {
			// A size check needs the record's mtime (the HOME's last run), not its project.
			var record unix.Stat_t
			if unix.Fstatat(rootFD, name+RecordSuffix, &record, unix.AT_SYMLINK_NOFOLLOW) == nil && record.Mode&unix.S_IFMT == unix.S_IFREG {
				entry.LastUse = time.Unix(record.Mtim.Unix())
				changed = later(changed, entry.LastUse)
			}
		} else if present[name+RecordSuffix] {
			if record, ok := readRecord(path); ok {
				entry.Project, entry.LastUse = record.project, record.used
				changed = later(changed, record.used)
				_, err := os.Stat(entry.Project)
				entry.Gone = errors.Is(err, fs.ErrNotExist)
			}
		}
		layers, hasLayers := unix.Stat_t{}, false
		if present[name+LayersSuffix] {
			if layers, hasLayers = ownDirAt(rootFD, name+LayersSuffix); hasLayers {
				changed = later(changed, time.Unix(layers.Mtim.Unix()))
			}
		}
		fd, opened := openDirAt(rootFD, name)
		entry.InUse = opened && inUse(fd)
		figure, ok := before[name]
		entry.Stored = stored != nil && ok && StoredFresh(figure, changed, entry.InUse, stored.now, stored.maxAge)
		if !entry.Stored {
			figure = Stored{At: time.Now(), Bytes: stat.Blocks * 512, InUse: entry.InUse}
			if opened {
				figure.Bytes, fd = usage(fd, stat), -1
			}
			if hasLayers {
				if layersFD, ok := openDirAt(rootFD, name+LayersSuffix); ok {
					figure.Bytes += usage(layersFD, layers)
				} else {
					figure.Bytes += layers.Blocks * 512
				}
			}
		}
		if fd >= 0 {
			unix.Close(fd)
		}
		entry.Size, entry.Measured = figure.Bytes, figure.At
		if stored != nil {
			after[name] = Stored{Bytes: entry.Size, At: entry.Measured, InUse: entry.InUse}
		}
		entries = append(entries, entry)
	}
	if stored != nil && !maps.EqualFunc(before, after, Stored.equal) {
		_ = writeSizes(rootFD, after) // a root the caller cannot write: walked every time
	}
	return entries, nil
}

func (s Stored) equal(o Stored) bool {
	return s.Bytes == o.Bytes && s.At.Equal(o.At) && s.InUse == o.InUse
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// readNames is every name in the open directory fd, which it leaves open: getdents
// itself, since an os.File for a descriptor costs a dup, fcntl and poller calls more.
func readNames(fd int) ([]string, error) {
	var names []string
	buffer := make([]byte, 8<<10)
	for {
		n, err := unix.Getdents(fd, buffer)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return names, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buffer[:n], -1, names)
	}
}

// ownDirAt: name in dirFD is a real directory (not a link) owned by the caller.
func ownDirAt(dirFD int, name string) (unix.Stat_t, bool) {
	var stat unix.Stat_t
	if unix.Fstatat(dirFD, name, &stat, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return stat, false
	}
	return stat, stat.Mode&unix.S_IFMT == unix.S_IFDIR && int(stat.Uid) == os.Geteuid()
}

// openDirAt opens the directory name in dirFD, never through a link.
func openDirAt(dirFD int, name string) (int, bool) {
	fd, err := unix.Openat(dirFD, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	return fd, err == nil
}

// inUse: a run holds the open HOME fd (its lock, see Hold).
func inUse(fd int) bool {
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return true
	}
	unix.Flock(fd, unix.LOCK_UN)
	return false
}

// usage is what du would say of the open directory fd (stat is its own, already taken),
// which it closes.
func usage(fd int, stat unix.Stat_t) int64 {
	usage := diskUsage{seen: map[[2]uint64]bool{}}
	usage.add(stat)
	usage.walk(fd) // closes fd
	return usage.total
}

// TotalSize is the space all entries take.
func TotalSize(entries []Entry) int64 {
	var total int64
	for _, entry := range entries {
		total += entry.Size
	}
	return total
}

// Selection is which HOMEs a prune removes: those matching every set criterion.
type Selection struct {
	All       bool
	OlderThan time.Duration // last use before now minus this; 0: not a criterion
	Project   string        // resolved workdir; "": not a criterion
}

// Empty: nothing was asked, so nothing may be removed.
func (s Selection) Empty() bool { return !s.All && s.OlderThan == 0 && s.Project == "" }

// Select decides which entries a prune removes (pure): never one in use, never one when
// nothing was asked.
func Select(entries []Entry, selection Selection, now time.Time) []Entry {
	if selection.Empty() {
		return nil
	}
	var chosen []Entry
	for _, entry := range entries {
		switch {
		case entry.InUse:
		case selection.OlderThan > 0 && !entry.LastUse.Before(now.Add(-selection.OlderThan)):
		case selection.Project != "" && entry.Project != selection.Project:
		default:
			chosen = append(chosen, entry)
		}
	}
	return chosen
}

// record is what a HOME's record file says.
type record struct {
	project string
	used    time.Time
}

type recordFile struct {
	Project string `json:"project"`
}

func readRecord(home string) (record, bool) {
	path := home + RecordSuffix
	info, err := os.Lstat(path)
	if err != nil || !info.Mode().IsRegular() {
		return record{}, false
	}
	data, err := os.ReadFile(path)
	var file recordFile
	if err != nil || len(data) > 64<<10 || json.Unmarshal(data, &file) != nil || !filepath.IsAbs(file.Project) {
		return record{}, false
	}
	return record{project: file.Project, used: info.ModTime()}, true
}

// Touch records that a run uses home for project: the record is written when it is
// missing or names another project (atomically, by a temp file and a rename in the
// homes' root), else only its mtime moves.
func Touch(home, project string) error {
	path := home + RecordSuffix
	if current, ok := readRecord(home); ok && current.project == project {
		now := time.Now()
		return os.Chtimes(path, now, now)
	}
	data, _ := json.Marshal(recordFile{Project: project})
	temp, err := os.CreateTemp(filepath.Dir(home), "."+filepath.Base(home)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(temp.Name())
	if _, err := temp.Write(append(data, '\n')); err != nil {
		temp.Close()
		return err
	}
	if err := temp.Close(); err != nil {
		return err
	}
	return os.Rename(temp.Name(), path)
}

// ownDir: path is a real directory (not a link) owned by the caller.
func ownDir(path string) bool {
	_, ok := ownDirAt(unix.AT_FDCWD, path)
	return ok
}

// diskUsage is what du would say: the blocks of every file under a directory, links not
// followed (each is stat'ed, never opened), each hard-linked inode once.
type diskUsage struct {
	total int64
	seen  map[[2]uint64]bool // inodes with more than one link, already counted
}

func (u *diskUsage) add(stat unix.Stat_t) {
	if stat.Nlink > 1 && stat.Mode&unix.S_IFMT != unix.S_IFDIR {
		key := [2]uint64{uint64(stat.Dev), stat.Ino}
		if u.seen[key] {
			return
		}
		u.seen[key] = true
	}
	u.total += stat.Blocks * 512
}

// walk adds everything in the open directory fd, which it closes, and below it. An
// unreadable corner is counted as far as it can be.
func (u *diskUsage) walk(fd int) {
	names, err := readNames(fd)
	if err != nil {
		unix.Close(fd)
		return
	}
	var subdirs []string
	for _, name := range names {
		var stat unix.Stat_t
		if unix.Fstatat(fd, name, &stat, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		u.add(stat)
		if stat.Mode&unix.S_IFMT == unix.S_IFDIR {
			subdirs = append(subdirs, name)
		}
	}
	for _, name := range subdirs {
		if sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
			u.walk(sub)
		}
	}
	unix.Close(fd)
}
