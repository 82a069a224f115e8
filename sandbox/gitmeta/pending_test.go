package gitmeta

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestPendingRoundTrip: a record reads back as written (paths that are not UTF-8
// included), whole, readable by its owner alone; AuditPending leaves it while its run
// holds it, then does its audit (moving aside a .git the run planted) and removes it; a
// record already gone is no error, and one that cannot be read stays.
func TestPendingRoundTrip(t *testing.T) {
	workdir := filepath.Join(t.TempDir(), "caf\xe9") // not UTF-8: a JSON string would name another path
	if err := os.MkdirAll(filepath.Join(workdir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(workdir, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := RepositoriesBelow(workdir)
	before[filepath.Join(workdir, "x", ".git")] = repositoryState{entry: [4]uint64{1, 2, 3, 4}, runs: 5}
	want := Pending{Workdir: workdir, Protect: []string{filepath.Join(workdir, ".git", "config")}, Before: before}
	record := filepath.Join(t.TempDir(), "audit-pending-1")
	lock, err := WritePending(record, want)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(record); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the record: %v %v", info, err)
	}
	got, err := ReadPending(record)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %+v, %v; want %+v", got, err, want)
	}
	planted := filepath.Join(workdir, "sub", ".git")
	if err := os.MkdirAll(planted, 0o755); err != nil {
		t.Fatal(err)
	}
	// Held by its run (the lock WritePending returned): not taken.
	if moved, done, err := AuditPending(record, 50*time.Millisecond); !errors.Is(err, ErrPendingLive) || done || moved != nil {
		t.Fatalf("a record its run holds: moved %v, done %v, %v", moved, done, err)
	}
	lock.Close()
	moved, done, err := AuditPending(record, 0)
	if err != nil || !done || len(moved) != 1 {
		t.Fatalf("AuditPending moved %v, done %v, %v", moved, done, err)
	}
	if _, err := os.Lstat(planted); err == nil {
		t.Error("the planted .git is still there")
	}
	if _, err := os.Lstat(record); err == nil {
		t.Error("the record was left")
	}
	if moved, done, err := AuditPending(record, 0); err != nil || done || moved != nil {
		t.Errorf("a record already gone: %v, %v, %v", moved, done, err)
	}
	os.WriteFile(record, []byte(`{"workdir":"cmVsYXRpdmU="}`), 0o600) // "relative"
	if _, done, err := AuditPending(record, 0); err == nil || done {
		t.Error("a record with a relative workdir was taken")
	}
	if _, err := os.Lstat(record); err != nil {
		t.Errorf("a record that cannot be read was not left for its error to name: %v", err)
	}
}
