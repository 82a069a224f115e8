package probecache

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestStoreThenLoadAndWhatIsOnlyAMiss(t *testing.T) {
	dir := filepath.Join(t.TempDir(), Version)
	key := "/usr/bin/bwrap|1|2|3|4.5|6.7"
	Store([]string{dir}, key, Entry{Version: "0.8.0", Build: "", Options: []string{"size", "bind-fd"}})
	entry, ok := Load([]string{dir}, key)
	if !ok || entry.Version != "0.8.0" || !slices.Equal(entry.Options, []string{"bind-fd", "size"}) {
		t.Fatalf("Load after Store = %+v %v", entry, ok)
	}
	if _, ok := Load([]string{dir}, key+"x"); ok {
		t.Error("another binary's key hit")
	}
	if err := os.WriteFile(filepath.Join(dir, Name(key)), []byte("damaged\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := Load([]string{dir}, key); ok {
		t.Error("a damaged entry hit")
	}
	Store([]string{dir}, key, Entry{Version: "0.8.0"})
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, ok := Load([]string{dir}, key); ok {
		t.Error("an entry in a directory anyone can write was believed")
	}
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		data string
		ok   bool
	}{
		{"k\n0.8.0\n\nbind-fd size\n", true},
		{"other\n0.8.0\n\nbind-fd\n", false},
		{"k\n0.8.0\n\nbind-fd", false},
		{"k\n0.8.0\n\nbind-fd\n\n", false},
	} {
		if _, ok := Parse("k", []byte(c.data)); ok != c.ok {
			t.Errorf("Parse(%q) ok = %v, want %v", c.data, ok, c.ok)
		}
	}
}
