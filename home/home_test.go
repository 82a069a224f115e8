package home

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSelect(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	old := Entry{Path: "/h/old", Project: "/p/old", LastUse: now.Add(-40 * 24 * time.Hour)}
	fresh := Entry{Path: "/h/fresh", Project: "/p/fresh", LastUse: now.Add(-time.Hour)}
	busy := Entry{Path: "/h/busy", Project: "/p/old", LastUse: now.Add(-50 * 24 * time.Hour), InUse: true}
	all := []Entry{old, fresh, busy}
	for _, tc := range []struct {
		name      string
		selection Selection
		want      []string
	}{
		{"nothing asked removes nothing", Selection{}, nil},
		{"all but the one in use", Selection{All: true}, []string{"/h/old", "/h/fresh"}},
		{"older than 30 days", Selection{OlderThan: 30 * 24 * time.Hour}, []string{"/h/old"}},
		{"one project", Selection{Project: "/p/fresh"}, []string{"/h/fresh"}},
		{"every criterion must hold", Selection{Project: "/p/fresh", OlderThan: 30 * 24 * time.Hour}, nil},
		{"a project whose HOME is in use", Selection{Project: "/p/old", All: true}, []string{"/h/old"}},
	} {
		var got []string
		for _, entry := range Select(all, tc.selection, now) {
			got = append(got, entry.Path)
		}
		if len(got) != len(tc.want) || (len(got) > 0 && (got[0] != tc.want[0] || got[len(got)-1] != tc.want[len(tc.want)-1])) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRemoveNeverFollowsAndOpensReadOnlyTrees: a HOME holding a read-only tree (Go's
// module cache), a mode-0000 directory and links to a victim outside is removed
// whole, and the victim stays untouched; a HOME another process holds is kept.
func TestRemoveNeverFollowsAndOpensReadOnlyTrees(t *testing.T) {
	root := t.TempDir()
	victim := t.TempDir()
	os.WriteFile(filepath.Join(victim, "keep"), []byte("precious"), 0o644)
	home := filepath.Join(root, "proj-0123456789abcdef")
	for _, dir := range []string{"pkg/mod/x@v1/sub", "locked"} {
		os.MkdirAll(filepath.Join(home, dir), 0o755)
	}
	os.WriteFile(filepath.Join(home, "pkg/mod/x@v1/sub/f.go"), []byte("package x"), 0o444)
	os.Symlink(victim, filepath.Join(home, "link-to-victim"))
	os.Symlink(victim, filepath.Join(home, "pkg/mod/x@v1/sub/deeper"))
	for _, dir := range []string{"pkg/mod/x@v1/sub", "pkg/mod/x@v1", "pkg/mod"} {
		os.Chmod(filepath.Join(home, dir), 0o555)
	}
	os.Chmod(filepath.Join(home, "locked"), 0)
	if err := Touch(home, "/p/proj"); err != nil {
		t.Fatal(err)
	}

	held, err := Hold(home)
	if err != nil {
		t.Fatal(err)
	}
	if err := Remove(home); err == nil || !isInUse(err) {
		t.Errorf("a held HOME: Remove = %v, want it kept as in use", err)
	}
	if entries, _ := List([]string{root}); len(entries) != 1 || !entries[0].InUse || entries[0].Project != "/p/proj" {
		t.Errorf("List while held: %+v", entries)
	}
	held.Release()

	if err := Remove(home); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := os.Lstat(home); !os.IsNotExist(err) {
		t.Errorf("the HOME is still there: %v", err)
	}
	if _, err := os.Lstat(home + RecordSuffix); !os.IsNotExist(err) {
		t.Errorf("its record is still there: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(victim, "keep")); err != nil || string(data) != "precious" {
		t.Errorf("the victim outside changed: %q %v", data, err)
	}
	if _, err := Hold(home); err == nil {
		t.Errorf("Hold on a removed HOME succeeded")
	}
}

// TestListSkipsWhatIsNotAHome: links and files in the root are never HOMEs.
func TestListSkipsWhatIsNotAHome(t *testing.T) {
	root := t.TempDir()
	victim := t.TempDir()
	os.Symlink(victim, filepath.Join(root, "planted-0123456789abcdef"))
	os.WriteFile(filepath.Join(root, "file-0123456789abcdef"), nil, 0o600)
	os.Mkdir(filepath.Join(root, "real-0123456789abcdef"), 0o700)
	entries, err := List([]string{root, filepath.Join(root, "missing")})
	if err != nil || len(entries) != 1 || filepath.Base(entries[0].Path) != "real-0123456789abcdef" {
		t.Errorf("List: %+v %v", entries, err)
	}
}

func isInUse(err error) bool { return errors.Is(err, ErrInUse) }
