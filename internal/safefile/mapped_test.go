package safefile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMappedShowsTheFile: Mapped hands fn the file's bytes, empty ones included (read,
// not mapped), refuses what Open refuses and a file past the limit, and passes fn's error.
func TestMappedShowsTheFile(t *testing.T) {
	dir, target := planted(t)
	content := bytes.Repeat([]byte("index "), 20000)
	if err := os.WriteFile(target, content, 0o600); err != nil {
		t.Fatal(err)
	}
	var seen []byte
	if err := Mapped(target, 1<<20, func(data []byte) error { seen = bytes.Clone(data); return nil }); err != nil || !bytes.Equal(seen, content) {
		t.Errorf("mapped %d bytes, %v", len(seen), err)
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	if err := Mapped(empty, 10, func(data []byte) error { seen = data; return nil }); err != nil || len(seen) != 0 {
		t.Errorf("empty: %q, %v", seen, err)
	}
	wantKind(t, Mapped(target, 100, func([]byte) error { return nil }), KindTooLarge, target)
	for name, kind := range map[string]Kind{"link": KindSymlink, "fifo": KindFIFO, "dir": KindDirectory} {
		path := filepath.Join(dir, name)
		err := within(t, "mapping "+name, func() error { return Mapped(path, 1<<20, func([]byte) error { return nil }) })
		wantKind(t, err, kind, path)
	}
	if err := Mapped(target, 1<<20, func([]byte) error { return os.ErrClosed }); err != os.ErrClosed {
		t.Errorf("fn's error became %v", err)
	}
}

// TestMappedSurvivesATruncation: a file cut short while mapped (another process
// truncating a git index) faults on the pages past its new end; that is an error from
// Mapped, not the end of the program.
func TestMappedSurvivesATruncation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	var past byte
	err := Mapped(path, 1<<21, func(data []byte) error {
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
		past = data[len(data)-1] // a page the truncation took away
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "shrank") || !strings.Contains(err.Error(), path) {
		t.Errorf("Mapped of a truncated file: %v (read %d)", err, past)
	}
}
