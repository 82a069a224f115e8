package gitmeta

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/safefile"
	"golang.org/x/sys/unix"
)

// Pending is a commit-mode run's audit (Audit), written down before the run's command
// can exist, so that the run's keeper can have it done should bwrapkit die before it
// does (a SIGKILL on an agent's tool timeout): the command's plants would otherwise
// wait, unaudited, for the user's next git in the project.
type Pending struct {
	Workdir string
	Protect []string
	Before  Repositories
}

// pendingFile is Pending as written. Paths are bytes (base64 in JSON): a path need not
// be UTF-8, and a JSON string would turn its other bytes into U+FFFD, naming another path.
type pendingFile struct {
	Workdir []byte         `json:"workdir"`
	Protect [][]byte       `json:"protect"`
	Before  []pendingEntry `json:"before"`
}

// pendingEntry is one repositoryState: its entry's four numbers, then its digest.
type pendingEntry struct {
	Path  []byte    `json:"path"`
	State [5]uint64 `json:"state"`
}

// WritePending writes p to path, whole or not at all (a temporary file renamed into
// place), readable by its owner alone, and returns it open with a shared lock (flock)
// taken before the rename: while the caller (and the run's keeper, which takes one too)
// holds it, no later run takes the record for abandoned (AuditPending). dir(path) must be
// private to the caller: the record says which directory a later audit moves entries in.
func WritePending(path string, p Pending) (*os.File, error) {
	file := pendingFile{Workdir: []byte(p.Workdir)}
	for _, path := range p.Protect {
		file.Protect = append(file.Protect, []byte(path))
	}
	for entry, state := range p.Before {
		file.Before = append(file.Before, pendingEntry{[]byte(entry), [5]uint64{state.entry[0], state.entry[1], state.entry[2], state.entry[3], state.runs}})
	}
	data, err := json.Marshal(file)
	if err != nil {
		return nil, err
	}
	temp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(temp.Name()) // gone once renamed
	err = unix.Flock(int(temp.Fd()), unix.LOCK_SH)
	if err == nil {
		_, err = temp.Write(data)
	}
	if err == nil {
		err = temp.Sync() // whole on disk before it has its name: a crash leaves no empty record
	}
	if err == nil {
		err = os.Rename(temp.Name(), path)
	}
	if err != nil {
		temp.Close()
		return nil, err
	}
	if dir, err := os.Open(filepath.Dir(path)); err == nil {
		_ = dir.Sync()
		dir.Close()
	}
	return temp, nil
}

// ErrPendingLive is AuditPending finding the record held: its run, or that run's keeper
// or auditor, is alive.
var ErrPendingLive = errors.New("the run that wrote it is still going (its bwrapkit, keeper or auditor holds it)")

// ReadPending reads a record WritePending wrote.
func ReadPending(path string) (Pending, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Pending{}, err
	}
	var file pendingFile
	if err := json.Unmarshal(data, &file); err != nil {
		return Pending{}, fmt.Errorf("%s: %w", path, err)
	}
	if !filepath.IsAbs(string(file.Workdir)) {
		return Pending{}, fmt.Errorf("%s: the workdir %q is not an absolute path", path, file.Workdir)
	}
	p := Pending{Workdir: string(file.Workdir), Before: Repositories{}}
	for _, protect := range file.Protect {
		p.Protect = append(p.Protect, string(protect))
	}
	for _, entry := range file.Before {
		n := entry.State
		p.Before[string(entry.Path)] = repositoryState{entry: [4]uint64{n[0], n[1], n[2], n[3]}, runs: n[4]}
	}
	return p, nil
}

// AuditPending takes the record at path for itself (an exclusive lock, waiting at most
// wait for the shared ones of a run, a keeper or an auditor to go), does the audit it
// holds and removes it: what Audit moved aside, whether the audit was done, and the
// error. A record that is gone (its run audited itself) is not done and no error; one
// still held after wait is ErrPendingLive; one that cannot be read stays, for the error
// to name.
func AuditPending(path string, wait time.Duration) (moved []string, done bool, err error) {
	f, err := safefile.Open(path) // never through a symlink, never waiting on a fifo
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	for deadline := time.Now().Add(wait); ; time.Sleep(20 * time.Millisecond) {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			break
		}
	}
	switch {
	case errors.Is(err, unix.EWOULDBLOCK):
		return nil, false, ErrPendingLive
	case err != nil:
		return nil, false, err
	}
	// Locked: still the record at path, or did its run remove it meanwhile?
	var held, named unix.Stat_t
	if unix.Fstat(int(f.Fd()), &held) != nil || unix.Lstat(path, &named) != nil || held.Dev != named.Dev || held.Ino != named.Ino {
		return nil, false, nil
	}
	p, err := ReadPending(path)
	if err != nil {
		return nil, false, err
	}
	moved, err = Audit(p.Workdir, p.Protect, p.Before)
	if removeErr := os.Remove(path); err == nil {
		err = removeErr
	}
	return moved, true, err
}
