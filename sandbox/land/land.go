package land

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

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
	Rules  Rules
	Bounds Bounds
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
	// One landing at a time per project, from its walk to its last change: each is
	// decided against the project as the landings before it left it. Runs of one project
	// at once landed over each other (a new directory both made: the second stopped,
	// "file exists", and kept the rest unlanded).
	unlock, err := lockLandings(filepath.Dir(layer.Dir), opts.Interrupt)
	if err != nil {
		return keepWhole(layer, err)
	}
	defer unlock()
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
		return outcome, applyErr
	}
	if len(outcome.Refused) == 0 {
		return outcome, layer.Discard()
	}
	outcome.Quarantine, err = layer.Quarantine(outcome.Refused, "")
	return outcome, err
}

// lockLandings waits for the project's landing lock (root, the directory of its layers,
// locked exclusively) and returns its release. The lock is the kernel's: it goes with a
// bwrapkit that dies while holding it. The wait has no bound of its own (another run's
// landing may copy for a while, as long as its command made it), so it gives up when
// interrupt closes: a signal must end a run that waits, as it ends one that runs.
func lockLandings(root string, interrupt <-chan struct{}) (func(), error) {
	dir, err := layerdir.Open(root)
	if err != nil {
		return nil, fmt.Errorf("opening the project's layers to land: %w", err)
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
			return nil, fmt.Errorf("waiting for the project's other landings: %w", err)
		}
		return release, nil
	case <-interrupt:
		// The wait in the kernel cannot be called off: the lock is let go as soon as it
		// comes, by closing the descriptor then.
		go func() {
			<-locked
			release()
		}()
		return nil, errors.New("interrupted while waiting for another run of this project to finish landing")
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
	kept, err := layer.Quarantine(nil, "not landed: "+cause.Error())
	if err != nil {
		kept = layer.Dir
	}
	return Outcome{Quarantine: kept}, &LayerError{Quarantine: kept, Err: cause}
}

func sameFileSystem(a, b int) bool {
	var sa, sb unix.Stat_t
	return unix.Fstat(a, &sa) == nil && unix.Fstat(b, &sb) == nil && sa.Dev == sb.Dev
}

// roomFor refuses a landing whose copies the project's file system cannot hold whole.
// Every file is copied when the layer lies on another file system; on the same one, a
// file with hard links is (each name lands as a file of its own), so a command's one file
// with a thousand names needs a thousand times its size. Without the check such a landing
// stopped at the full disk, half landed, with the disk left full.
func roomFor(projectFD int, decisions []Decision, rename bool) error {
	need := copiedBytes(decisions, rename)
	if need == 0 {
		return nil
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(projectFD, &fs); err != nil {
		return err
	}
	free := int64(fs.Bavail) * fs.Bsize
	if need > free {
		return fmt.Errorf("the command's changes need %d bytes of copies (every file with hard links lands as a copy per name) and the project's file system has %d free: free space there and run it again", need, free)
	}
	return nil
}

// copiedBytes is what the landing's copies write: a copy keeps a sparse file's holes, so
// a file counts its data, and a block for its inode and last partial block.
func copiedBytes(decisions []Decision, rename bool) int64 {
	var need int64
	for _, decision := range decisions {
		entry := decision.Entry
		if decision.Action != Apply || entry.Kind != KindFile || rename && entry.Nlink == 1 {
			continue
		}
		need += entry.Data + 4096
	}
	return need
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
