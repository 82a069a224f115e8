package home

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStoredFresh(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := now.Add(-10 * time.Minute)
	long := now.Add(-24 * time.Hour)
	for _, c := range []struct {
		name    string
		stored  Stored
		changed time.Time
		inUse   bool
		want    bool
	}{
		{"unchanged since", Stored{Bytes: 1, At: at}, long, false, true},
		{"never measured", Stored{}, long, false, false},
		{"too old", Stored{Bytes: 1, At: now.Add(-2 * time.Hour)}, long, false, false},
		{"measured in the future (clock set back)", Stored{Bytes: 1, At: now.Add(time.Minute)}, long, false, false},
		{"a run started after", Stored{Bytes: 1, At: at}, at.Add(time.Second), false, false},
		{"a run started just before (coarse timestamps)", Stored{Bytes: 1, At: at}, at.Add(-time.Second), false, false},
		{"in use now", Stored{Bytes: 1, At: at}, long, true, false},
		{"in use then", Stored{Bytes: 1, At: at, InUse: true}, long, false, false},
	} {
		if got := StoredFresh(c.stored, c.changed, c.inUse, now, time.Hour); got != c.want {
			t.Errorf("%s: fresh %v, want %v", c.name, got, c.want)
		}
	}
}

// backdate moves a planted HOME's record, directory and layers an hour back, as a HOME
// last used an hour ago.
func backdate(t *testing.T, home string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	for _, path := range []string{home + RecordSuffix, home, home + LayersSuffix} {
		if err := os.Chtimes(path, old, old); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

func sizeOf(t *testing.T, entries []Entry, path string) Entry {
	t.Helper()
	for _, entry := range entries {
		if entry.Path == path {
			return entry
		}
	}
	t.Fatalf("%s not listed: %+v", path, entries)
	return Entry{}
}

// TestListStored: a stored figure stands until something says the HOME changed (a run's
// record, the HOME's own or its layers' mtime), it is too old, or a run holds the HOME;
// then the HOME is walked again, and the size is du's. Without the stored figure each
// listing walks (the second listing below would see the new file).
func TestListStored(t *testing.T) {
	root := t.TempDir()
	home := plantHome(t, root, "stored-0123456789abcdef", true)
	backdate(t, home)
	list := func(now time.Time) Entry {
		t.Helper()
		entries, err := ListStored([]string{root}, now, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 {
			t.Fatalf("%d HOMEs listed (the stored figures are no HOME): %+v", len(entries), entries)
		}
		return sizeOf(t, entries, home)
	}
	first := list(time.Now())
	if want := duBytes(t, home, home+LayersSuffix); first.Size != want {
		t.Fatalf("first listing: %d bytes, du says %d", first.Size, want)
	}
	if _, err := os.Stat(filepath.Join(root, sizesName)); err != nil {
		t.Fatalf("no figures stored: %v", err)
	}
	// A file deep in a cache, as a Go API run writes one: no record moves.
	deep := filepath.Join(home, ".cache", "go-build", "ab", "new")
	if err := os.WriteFile(deep, make([]byte, 64<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(filepath.Join(home, ".cache", "go-build", "ab"), time.Now().Add(-time.Hour), time.Now().Add(-time.Hour))
	again := list(time.Now())
	if first.Stored || !again.Stored || again.Size != first.Size || !again.Measured.Equal(first.Measured) {
		t.Fatalf("an unchanged HOME was walked again: %+v, then %+v", first, again)
	}
	grown := duBytes(t, home, home+LayersSuffix)
	if aged := list(time.Now().Add(2 * time.Hour)); aged.Size != grown {
		t.Errorf("a figure older than the bound stood: %d bytes, du says %d", aged.Size, grown)
	}

	// A run's start moves the record: walked at once.
	backdate(t, home)
	list(time.Now())
	if err := os.WriteFile(deep, make([]byte, 128<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Touch(home, "/nonexistent/project-stored"); err != nil {
		t.Fatal(err)
	}
	if used := list(time.Now()); used.Size != duBytes(t, home, home+LayersSuffix) {
		t.Errorf("a HOME a run used since was not walked: %d bytes, du says %d", used.Size, duBytes(t, home, home+LayersSuffix))
	}

	// A HOME a run holds is walked every time.
	backdate(t, home)
	list(time.Now())
	held, err := Hold(home)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	if err := os.Remove(deep); err != nil {
		t.Fatal(err)
	}
	if busy := list(time.Now()); !busy.InUse || busy.Size != duBytes(t, home, home+LayersSuffix) {
		t.Errorf("a HOME in use: %+v, du says %d", busy, duBytes(t, home, home+LayersSuffix))
	}
}

// TestListStoredDistrusts: figures in a file that is a link, or unreadable, are none:
// every HOME is walked.
func TestListStoredDistrusts(t *testing.T) {
	root := t.TempDir()
	home := plantHome(t, root, "distrust-0123456789abcdef", false)
	backdate(t, home)
	lie := filepath.Join(t.TempDir(), "lie.json")
	if err := os.WriteFile(lie, []byte(`{"homes":{"distrust-0123456789abcdef":{"bytes":1,"at":"`+time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, plant := range map[string]func(path string) error{
		"a link":  func(path string) error { return os.Symlink(lie, path) },
		"garbage": func(path string) error { return os.WriteFile(path, []byte("{not json"), 0o600) },
	} {
		path := filepath.Join(root, sizesName)
		os.Remove(path)
		if err := plant(path); err != nil {
			t.Fatal(err)
		}
		entries, err := ListStored([]string{root}, time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := sizeOf(t, entries, home).Size, duBytes(t, home); got != want {
			t.Errorf("figures in %s: %d bytes, du says %d", name, got, want)
		}
	}
	// The same figures in a real file of the caller's stand: the test above proves the
	// refusal, not a figure that never stands.
	path := filepath.Join(root, sizesName)
	os.Remove(path)
	data, _ := os.ReadFile(lie)
	os.WriteFile(path, data, 0o600)
	entries, _ := ListStored([]string{root}, time.Now(), time.Hour)
	if got := sizeOf(t, entries, home).Size; got != 1 {
		t.Errorf("a stored figure in the caller's own file did not stand: %d bytes", got)
	}
}
