package gitmeta

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
// place), readable by its owner alone. dir(path) must be private to the caller: the
// record says which directory a later audit moves entries in.
func WritePending(path string, p Pending) error {
	file := pendingFile{Workdir: []byte(p.Workdir)}
	for _, path := range p.Protect {
		file.Protect = append(file.Protect, []byte(path))
	}
	for entry, state := range p.Before {
		file.Before = append(file.Before, pendingEntry{[]byte(entry), [5]uint64{state.entry[0], state.entry[1], state.entry[2], state.entry[3], state.runs}})
	}
	data, err := json.Marshal(file)
	if err != nil {
		return err
	}
	temp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(temp.Name()) // gone once renamed
	_, err = temp.Write(data)
	if closeErr := temp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(temp.Name(), path)
	}
	return err
}

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

// AuditPending does the audit a record holds, then removes the record: what Audit
// moved aside, and its error (what the user must still do, a spoilt HEAD say: the audit
// is done all the same). A record already gone (its run audited itself) is no error and
// moves nothing; one that cannot be read stays, for the error to name.
func AuditPending(path string) ([]string, error) {
	p, err := ReadPending(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	moved, err := Audit(p.Workdir, p.Protect, p.Before)
	if removeErr := os.Remove(path); err == nil {
		err = removeErr
	}
	return moved, err
}
