package land

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/layerdir"
	"golang.org/x/sys/unix"
)

// Outcome is what a landing did.
type Outcome struct {
	Changes Changes
	// Refused are the reported refusals (an entry inside a refused new directory is
	// covered by that directory's line).
	Refused []Decision
	// Quarantine is where the refused entries (or a whole layer that could not be
	// vetted) were kept; "" when nothing was.
	Quarantine string
}

// Options are a landing's inputs besides the layer and the project.
type Options struct {
	Rules Rules
	// MakeRules, when set, gives the rules once the landing lock is held, in place of
	// Rules: what they read of the project (its current branch, whether a name exists)
	// is then as the landings before this one left it.
	MakeRules func() Rules
	Bounds    Bounds
	// Verify fills in Entry.GitOK for the entries under a commit-mode .git (it runs the
	// host's git); nil leaves them unverified, so they are refused.
	Verify func(upper string, entries []Entry)
	// Chown: give replaced files their old owner back (the caller is root).
	Chown bool
	// Interrupt, closed when the caller is interrupted (a signal), makes a landing still
	// waiting for another landing of the project give up: nothing lands, the layer is kept.
	Interrupt <-chan struct{}
}

// Land vets layer against the project (open at projectFD) and lands what is accepted.
// Nothing lands unless the whole layer could be walked and, where files must be copied,
// the project's file system has room for all of them: a bad layer lands nothing.
func Land(layer *Layer, projectFD int, opts Options) (Outcome, error) {
	upper, err := unix.Open(layer.Upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return Outcome{}, fmt.Errorf("opening the run's layer: %w", err)
	}
	defer unix.Close(upper)
	bounds := opts.Bounds
	if bounds.Entries == 0 {
		bounds = DefaultBounds()
	}
	// One landing at a time, from its walk to its last change: each is decided against
	// the project as the landings before it left it. Runs of one project at once landed
	// over each other (a new directory both made: the second stopped, "file exists", and
	// kept the rest unlanded).
	unlock, err := lockLandings(LandingsLock(layer.Dir), opts.Interrupt)
	if err != nil {
		return keepWhole(layer, err)
	}
	defer unlock()
	if opts.MakeRules != nil {
		opts.Rules = opts.MakeRules()
	}
	entries, err := Walk(upper, projectFD, bounds)
	if err != nil {
		return keepWhole(layer, err)
	}
	if opts.Verify != nil {
		opts.Verify(layer.Upper, entries)
	}
	decisions := Decide(entries, opts.Rules)
	rename := sameFileSystem(upper, projectFD)
	if err := roomFor(projectFD, decisions, rename); err != nil {
		return keepWhole(layer, err)
	}
	if err := layer.BeginLanding(); err != nil {
		return keepWhole(layer, err)
	}
	journal := layer.Journal()
	applier := &Applier{Upper: upper, Project: projectFD, Rename: rename, Chown: opts.Chown, Journal: journal}
	changes, applyErr := applier.Apply(decisions)
	journal.Close()
	outcome := Outcome{Changes: changes}
	for _, decision := range decisions {
		if decision.Action == Refuse && decision.Rule != RuleInsideRefused {
			outcome.Refused = append(outcome.Refused, decision)
		}
	}
	if applyErr != nil {
		outcome.Quarantine, _ = layer.Quarantine(outcome.Refused, "landing stopped: "+applyErr.Error())
		if outcome.Quarantine == "" {
			outcome.Quarantine = layer.Dir // not renamed: kept where it is, marked as landing
		}
		return outcome, applyErr
	}
	if len(outcome.Refused) == 0 {
		return outcome, layer.Discard()
	}
	outcome.Quarantine, err = layer.Quarantine(outcome.Refused, "")
	return outcome, err
}

// LandingsLock is the directory whose flock a landing of the layer at layerDir holds:
// the caller's root of every project's layers (layerDir is <root>/<project>/run-ID), not
// the project's own. Projects nest (a run in P and one in P/sub, a repository and its
// submodule), and landings that each decide against their own project's lock raced in
// the shared tree: each landed half of what git-shape refuses whole (HEAD, objects/ and
// config from one run, refs/ from the other), and git took the directory for a
// repository. So a caller's landings go one at a time, whatever their projects.
func LandingsLock(layerDir string) string { return filepath.Dir(filepath.Dir(layerDir)) }

// HoldLandings keeps the caller's landings (see LandingsLock) from starting while a
// sandbox's view of a project is compared with the project: it takes the landings lock
// shared, waiting at most bound for a landing under way to end, and returns its release.
// A landing that outlasts the bound (one that copies gigabytes) is not waited out: the
// release is then a no-op, and the comparison is made with the project changing under
// it, as before there was a lock. overlayfs does not look at a lower layer again once it
// has looked an entry up, so a file another run landed in the middle of the comparison
// left the sandbox showing the old one, and every later look refused the run as a
// swapped path.
func HoldLandings(layerDir string, bound time.Duration) (release func()) {
	dir, err := layerdir.Open(LandingsLock(layerDir))
	if err != nil {
		return func() {}
	}
	fd := int(dir.Fd())
	pause := time.Millisecond
	for deadline := time.Now().Add(bound); ; pause = min(2*pause, 16*time.Millisecond) {
		err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
		if err == nil {
			return func() { dir.Close() }
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR || time.Now().Add(pause).After(deadline) {
			dir.Close()
			return func() {}
		}
		time.Sleep(pause)
	}
}

// lockLandings waits for the landing lock (root, locked exclusively) and returns its
// release. The lock is the kernel's: it goes with a bwrapkit that dies while holding it.
// The wait has no bound of its own (another run's landing may copy for a while, as long
// as its command made it), so it gives up when interrupt closes: a signal must end a run
// that waits, as it ends one that runs.
func lockLandings(root string, interrupt <-chan struct{}) (func(), error) {
	dir, err := layerdir.Open(root)
	if err != nil {
		return nil, fmt.Errorf("opening your layers directory to land: %w", err)
	}
	fd, release := int(dir.Fd()), func() { dir.Close() }
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
		return release, nil // no other landing: the usual case, without a thread blocked
	}
	locked := make(chan error, 1)
	go func() {
		var err error
		for err = unix.Flock(fd, unix.LOCK_EX); err == unix.EINTR; err = unix.Flock(fd, unix.LOCK_EX) {
		}
		locked <- err
	}()
	select {
	case err := <-locked:
		if err != nil {
			release()
			return nil, fmt.Errorf("waiting for your other landings: %w", err)
		}
		return release, nil
	case <-interrupt:
		// The wait in the kernel cannot be called off: the lock is let go as soon as it
		// comes, by closing the descriptor then.
		go func() {
			<-locked
			release()
		}()
		return nil, errors.New("interrupted while waiting for another of your runs to finish landing")
	}
}

// LayerError is a layer that could not be vetted; nothing of it landed and it was kept.
type LayerError struct {
	Quarantine string
	Err        error
}

func (e *LayerError) Error() string {
	return fmt.Sprintf("%v (the project is as it was; the command's changes are kept in %s)", e.Err, e.Quarantine)
}

func (e *LayerError) Unwrap() error { return e.Err }

func keepWhole(layer *Layer, cause error) (Outcome, error) {
	kept, _ := layer.Quarantine(nil, "not landed: "+cause.Error())
	if kept == "" {
		kept = layer.Dir // not renamed: kept where it is
	}
	return Outcome{Quarantine: kept}, &LayerError{Quarantine: kept, Err: cause}
}

func sameFileSystem(a, b int) bool {
	var sa, sb unix.Stat_t
	return unix.Fstat(a, &sa) == nil && unix.Fstat(b, &sb) == nil && sa.Dev == sb.Dev
}

// roomFor refuses a landing whose new entries the project's file system cannot hold
// whole, in bytes or in inodes. Every file is copied when the layer lies on another file
// system; on the same one, a file with hard links is (each name lands as a file of its
// own), so a command's one file with a thousand names needs a thousand times its size and
// a thousand inodes. Symlinks and new directories are made anew either way. Without the
// check such a landing stopped at the full disk, half landed, and left it full.
func roomFor(projectFD int, decisions []Decision, rename bool) error {
	bytes, inodes := landingNeeds(decisions, rename)
	if bytes == 0 && inodes == 0 {
		return nil
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(projectFD, &fs); err != nil {
		return err
	}
	const why = "every file with hard links lands as a copy per name"
	if free := int64(fs.Bavail) * fs.Bsize; bytes > free {
		return fmt.Errorf("the command's changes need %d bytes of new files (%s) and the project's file system has %d free: free space there and run it again", bytes, why, free)
	}
	// A file system that makes inodes as it goes (btrfs) reports none in all.
	if fs.Files > 0 && uint64(inodes) > fs.Ffree {
		return fmt.Errorf("the command's changes need %d new inodes (%s) and the project's file system has %d free: free some there and run it again", inodes, why, fs.Ffree)
	}
	return nil
}

// landingNeeds is what a landing's new entries take (pure): the bytes and inodes of
// every file it copies (a copy keeps a sparse file's holes, so a file counts its data,
// plus a block for its last part), symlink (a block when its target does not fit in the
// inode: 60 bytes or more on ext4) and new directory (a block); a directory entry for
// every new name; and, on the layer's own file system, the landing's journal (a line
// per temporary name) and marker. What moves by rename, a file or a new directory with
// everything in it, takes nothing more.
func landingNeeds(decisions []Decision, rename bool) (bytes, inodes int64) {
	const block = 4096
	var moved subtree // the last new directory that lands whole by one rename
	for _, decision := range decisions {
		entry := decision.Entry
		if moved.holds(entry.Path) || decision.Action != Apply {
			continue
		}
		if entry.Lower.Kind == KindAbsent && entry.Kind != KindWhiteout {
			bytes += int64(len(path.Base(entry.Path))) + 16 // its name in its directory
		}
		journal := int64(len(entry.Path)) + 48 // the path and a temporary name
		switch {
		case entry.Kind == KindDir && entry.Lower.Kind == KindDir:
			// a mode change, or a directory whose contents land one by one
		case entry.Kind == KindDir && rename && decision.Whole:
			moved = subtree{entry.Path}
		case entry.Kind == KindDir:
			bytes, inodes = bytes+block, inodes+1
		case entry.Kind == KindFile && (!rename || entry.Nlink > 1):
			bytes, inodes = bytes+entry.Data+block, inodes+1
			if rename {
				bytes += journal
			}
		case entry.Kind == KindSymlink:
			inodes++
			if len(entry.Target) >= 60 {
				bytes += block
			}
			if rename {
				bytes += journal
			}
		}
	}
	if rename && (bytes > 0 || inodes > 0) {
		bytes, inodes = bytes+2*block, inodes+2 // the journal and the landing marker
	}
	return bytes, inodes
}

// Quarantined is how a stderr line names a kept layer.
func Quarantined(path string) string {
	if path == "" {
		return ""
	}
	if _, err := os.Stat(path); err != nil {
		return path + " (gone)"
	}
	return path
}
