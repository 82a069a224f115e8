package land

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/internal/layerdir"
)

// A Layer is one run's upper layer and overlayfs work directory, in a directory of
// bwrapkit's own (Root/run-ID). The run holds an exclusive lock (flock) on that
// directory itself for its whole life: a layer whose lock anyone can take belongs to a
// bwrapkit that died. The lock is on the directory's inode, so it moves with a rename
// to a quarantine; no lock file is made, nor removed, on a run's path.
type Layer struct {
	Dir   string // Root/run-ID
	Upper string
	Work  string
	lock  *os.File
}

const (
	runPrefix = "run-"
	newPrefix = "new-" // a layer being made (NewLayer)
	// staleNew: a layer left being made this long ago belongs to a bwrapkit that died
	// within NewLayer (making one takes microseconds).
	staleNew         = time.Minute
	quarantinePrefix = "quarantine-"
	journalName      = "journal"
	// landingName marks a layer whose landing has begun: from then on part of it may
	// be in the project, so a bwrapkit killed midway leaves the rest to keep, not remove.
	landingName = "landing"
	// RefusedList is the file in a quarantine that lists what was refused and why.
	RefusedList = "REFUSED"
)

// NewLayer makes a fresh layer under root (which must exist, private to the caller).
// It is made and locked under a name Abandoned never takes (new-ID) and only then renamed
// to run-ID, so no other run can find it unlocked; the lock goes with the rename.
func NewLayer(root string) (*Layer, error) {
	id := time.Now().UTC().Format("20060102T150405") + "-" + randomName()[:8]
	making := filepath.Join(root, newPrefix+id)
	if err := os.Mkdir(making, 0o700); err != nil {
		return nil, fmt.Errorf("making the run's layer: %w", err)
	}
	lock, err := layerdir.TryLock(making)
	if err != nil {
		os.Remove(making)
		return nil, fmt.Errorf("locking the run's layer: %w", err)
	}
	for _, sub := range []string{"upper", "work"} {
		if err = os.Mkdir(filepath.Join(making, sub), 0o700); err != nil {
			break
		}
	}
	dir := filepath.Join(root, runPrefix+id)
	if err == nil {
		err = os.Rename(making, dir)
	}
	if err != nil {
		_ = removeOwn(making)
		lock.Close()
		return nil, fmt.Errorf("making the run's layer: %w", err)
	}
	return &Layer{Dir: dir, Upper: filepath.Join(dir, "upper"), Work: filepath.Join(dir, "work"), lock: lock}, nil
}

func syscall0() int { return unix.O_NOFOLLOW | unix.O_CLOEXEC }

// Discard removes the layer (a run that never started, or whose changes all landed).
func (l *Layer) Discard() error {
	err := removeOwn(l.Dir)
	l.lock.Close()
	return err
}

// Quarantine renames the layer to Root/quarantine-ID and writes its REFUSED list there;
// it returns the new path. The lock goes with it, released. The rename comes first: it
// needs no space, and a landing stopped by a full disk must still be kept and named (it
// was neither, when the list was written first and failed). The list is then written as
// far as it can be: the error says what is missing, the path is still the layer's.
func (l *Layer) Quarantine(refused []Decision, cause string) (string, error) {
	var list strings.Builder
	if cause != "" {
		fmt.Fprintf(&list, "# %s\n", cause)
	}
	for _, decision := range refused {
		fmt.Fprintf(&list, "%s\t%s\n", decision.Rule, Printable(orRoot(decision.Entry.Path)))
	}
	dest := filepath.Join(filepath.Dir(l.Dir), quarantinePrefix+strings.TrimPrefix(filepath.Base(l.Dir), runPrefix))
	if err := os.Rename(l.Dir, dest); err != nil {
		return "", err
	}
	l.lock.Close()
	if err := os.WriteFile(filepath.Join(dest, RefusedList), []byte(list.String()), 0o600); err != nil {
		return dest, fmt.Errorf("writing the list of what was not landed: %w", err)
	}
	return dest, nil
}

// AbandonedLayer is a layer no live run holds: its bwrapkit died.
type AbandonedLayer struct {
	Dir string
	// MidLanding: it died while landing, so part of the layer is in the project (each
	// file whole, old or new) and what is left in Dir did not land. Such a layer is
	// always kept, as a quarantine: removing it would lose changes nobody saw land.
	MidLanding bool
}

// Abandoned are the layers under root that no live run holds (their bwrapkit died):
// nothing of them landed, or a landing stopped midway. One that never began landing is
// removed, or kept as a quarantine when keep is set; one that stopped midway is always
// kept. The temporary files a stopped landing left in the project are removed.
func Abandoned(root string, project int, keep bool) ([]AbandonedLayer, error) {
	names, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var found []AbandonedLayer
	for _, entry := range names {
		if entry.IsDir() && strings.HasPrefix(entry.Name(), newPrefix) {
			removeStaleNew(filepath.Join(root, entry.Name()))
			continue
		}
		if !entry.IsDir() || !strings.HasPrefix(entry.Name(), runPrefix) {
			continue
		}
		dir := filepath.Join(root, entry.Name())
		lock, err := layerdir.TryLock(dir)
		if err != nil {
			continue // a live run's, gone meanwhile, or not ours
		}
		if !stillNamed(lock, dir) {
			lock.Close()
			continue // its run discarded it between the open and the lock
		}
		cleanJournal(filepath.Join(dir, journalName), project)
		_, landingErr := os.Lstat(filepath.Join(dir, landingName))
		midLanding := landingErr == nil
		if keep || midLanding {
			dest := filepath.Join(root, quarantinePrefix+strings.TrimPrefix(entry.Name(), runPrefix))
			note := "# abandoned: the bwrapkit that ran this was killed; nothing of it was vetted\n"
			if midLanding {
				note = "# interrupted: the bwrapkit that ran this was killed while landing it; what is here did not land, the rest did (each file whole)\n"
			}
			_ = os.WriteFile(filepath.Join(dir, RefusedList), []byte(note), 0o600)
			if err := os.Rename(dir, dest); err == nil {
				dir = dest
			}
		} else {
			_ = removeOwn(dir)
		}
		lock.Close()
		found = append(found, AbandonedLayer{Dir: dir, MidLanding: midLanding})
	}
	return found, nil
}

// stillNamed reports whether the directory locked through lock is still the one at
// path. A run's Discard removes its layer and only then lets its lock go, so a sweep that
// opened the layer before the removal gets the lock of a directory no longer there: it
// reported a run that ended well as killed before it landed (1 in about 400 runs at once).
func stillNamed(lock *os.File, path string) bool {
	var held, named unix.Stat_t
	return unix.Fstat(int(lock.Fd()), &held) == nil && held.Nlink > 0 &&
		unix.Lstat(path, &named) == nil && named.Dev == held.Dev && named.Ino == held.Ino
}

// BeginLanding marks the layer as landing (see landingName), before the first change
// reaches the project.
func (l *Layer) BeginLanding() error {
	f, err := os.OpenFile(filepath.Join(l.Dir, landingName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("marking the run's layer as landing: %w", err)
	}
	return f.Close()
}

// removeStaleNew removes a layer whose making stopped midway: unlocked, and older than
// staleNew (a NewLayer between its mkdir and its lock is younger). No command ever ran in
// it, so nothing of it is reported.
func removeStaleNew(dir string) {
	// Its age first, unlocked: a young one is a NewLayer under way, whose lock (taken
	// without waiting) this sweep must not hold even for a moment (it did, and about one
	// run in 300 at 32 at once was refused with "locking the run's layer").
	if info, err := os.Lstat(dir); err != nil || time.Since(info.ModTime()) <= staleNew {
		return
	}
	lock, err := layerdir.TryLock(dir)
	if err != nil {
		return
	}
	defer lock.Close()
	var stat unix.Stat_t
	if unix.Fstat(int(lock.Fd()), &stat) != nil {
		return
	}
	if time.Since(time.Unix(stat.Mtim.Unix())) > staleNew {
		_ = removeOwn(dir)
	}
}

// Journal is the layer's landing journal: the file is made at the first record, so a
// landing that writes no temporary file (every one by rename, or nothing to land)
// makes and removes no file for it.
func (l *Layer) Journal() *Journal { return &Journal{path: filepath.Join(l.Dir, journalName)} }

// Journal records each temporary name before the applier makes it (see cleanJournal).
type Journal struct {
	path string
	file *os.File
}

func (j *Journal) Write(record []byte) (int, error) {
	if j.file == nil {
		file, err := os.OpenFile(j.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall0(), 0o600)
		if err != nil {
			return 0, err
		}
		j.file = file
	}
	return j.file.Write(record)
}

// Close closes the journal's file, if one was made.
func (j *Journal) Close() error {
	if j.file == nil {
		return nil
	}
	return j.file.Close()
}

// cleanJournal removes the temporary files a landing that died left in the project.
func cleanJournal(path string, project int) {
	data, err := os.ReadFile(path)
	if err != nil || project < 0 {
		return
	}
	for _, line := range strings.Split(string(data), "\n") {
		rel, temp, found := strings.Cut(line, "\x00")
		if !found || !strings.HasPrefix(temp, TempPrefix) || strings.Contains(temp, "/") {
			continue
		}
		parent, _ := split(rel)
		fd, err := openBeneath(project, parent, unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			continue
		}
		_ = unix.Unlinkat(fd, temp, 0)
		unix.Close(fd)
	}
}

// Remove removes a directory of layers bwrapkit made (a doctor's scratch project's).
func Remove(dir string) error { return removeOwn(dir) }

// removeOwn removes one of bwrapkit's own layer directories, links never followed
// (package layerdir): a run's own short layer costs no walk of its own.
func removeOwn(dir string) error { return layerdir.Remove(dir) }

// Printable is a path as it may be shown on one line: quoted when it holds a control
// character, so a name with a newline cannot forge a line of bwrapkit's own output.
func Printable(path string) string {
	if strings.ContainsFunc(path, unicode.IsControl) {
		return strconv.Quote(path)
	}
	return path
}
