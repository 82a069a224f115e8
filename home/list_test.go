package home

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// plantHome makes a HOME in root like a run leaves one: a few files, a nested cache, a
// hard link, a symbolic link out of it, and its record; with layers when asked.
func plantHome(t testing.TB, root, name string, layers bool) string {
	t.Helper()
	home := filepath.Join(root, name)
	for _, dir := range []string{".cache/go-build/ab", ".config"} {
		if err := os.MkdirAll(filepath.Join(home, dir), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for i, file := range []string{".bash_history", ".cache/go-build/ab/obj", ".config/settings"} {
		if err := os.WriteFile(filepath.Join(home, file), make([]byte, 5000*(i+1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(home, ".config/settings"), filepath.Join(home, "settings-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr", filepath.Join(home, "usr-link")); err != nil {
		t.Fatal(err)
	}
	if layers {
		if err := os.MkdirAll(filepath.Join(home+LayersSuffix, "go", "upper"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home+LayersSuffix, "go", "upper", "mod"), make([]byte, 9000), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := Touch(home, "/nonexistent/project-"+name); err != nil {
		t.Fatal(err)
	}
	return home
}

// duBytes is du's answer for the paths together (each hard-linked inode once).
func duBytes(t *testing.T, paths ...string) int64 {
	t.Helper()
	out, err := exec.Command("du", append([]string{"-s", "-c", "-B1"}, paths...)...).Output()
	if err != nil {
		t.Fatalf("du: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	total, err := strconv.ParseInt(strings.Fields(lines[len(lines)-1])[0], 10, 64)
	if err != nil {
		t.Fatalf("du said %q", out)
	}
	return total
}

// TestListMatchesDu: every HOME's size is what du says of it and its layers (links not
// followed, a hard-linked file once), its record is read, and nothing else in the root is
// a HOME.
func TestListMatchesDu(t *testing.T) {
	root := t.TempDir()
	plain := plantHome(t, root, "plain-0123456789abcdef", false)
	layered := plantHome(t, root, "layered-0123456789abcdef", true)
	unrecorded := filepath.Join(root, "unrecorded-0123456789abcdef")
	if err := os.Mkdir(unrecorded, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(unrecorded, old, old); err != nil {
		t.Fatal(err)
	}
	os.Symlink(plain, filepath.Join(root, "link-0123456789abcdef"))
	entries, err := List([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{
		plain:      duBytes(t, plain),
		layered:    duBytes(t, layered, layered+LayersSuffix),
		unrecorded: duBytes(t, unrecorded),
	}
	if len(entries) != len(want) {
		t.Fatalf("List found %d HOMEs, want %d: %+v", len(entries), len(want), entries)
	}
	for _, entry := range entries {
		if entry.Size != want[entry.Path] {
			t.Errorf("%s: size %d, du says %d", entry.Path, entry.Size, want[entry.Path])
		}
		recorded := entry.Path != unrecorded
		if recorded != (entry.Project != "") || recorded != entry.Gone {
			t.Errorf("%s: project %q, gone %v", entry.Path, entry.Project, entry.Gone)
		}
		if entry.InUse {
			t.Errorf("%s: in use, with no run holding it", entry.Path)
		}
	}
	if entries[0].Path != unrecorded || !entries[0].LastUse.Equal(old) {
		t.Errorf("oldest first, by its own mtime when unrecorded: %+v", entries[0])
	}
	held, err := Hold(plain)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	entries, _ = List([]string{root})
	for _, entry := range entries {
		if entry.InUse != (entry.Path == plain) {
			t.Errorf("%s: in use %v, held %v", entry.Path, entry.InUse, entry.Path == plain)
		}
	}
}

// BenchmarkList is the doctor's homes check on 300 HOMEs, as a busy host has.
func BenchmarkList(b *testing.B) {
	root := b.TempDir()
	for i := range 300 {
		plantHome(b, root, fmt.Sprintf("project-%016x", i), i%3 == 0)
	}
	for b.Loop() {
		if entries, err := List([]string{root}); err != nil || len(entries) != 300 {
			b.Fatalf("List: %d, %v", len(entries), err)
		}
	}
}

// BenchmarkListStored is the same listing with the figures a previous listing stored (the
// HOMEs unused since): the doctor's homes check on a fleet, every minute.
func BenchmarkListStored(b *testing.B) {
	root := b.TempDir()
	old := time.Now().Add(-time.Hour)
	for i := range 300 {
		home := plantHome(b, root, fmt.Sprintf("project-%016x", i), i%3 == 0)
		for _, path := range []string{home + RecordSuffix, home, home + LayersSuffix} {
			os.Chtimes(path, old, old)
		}
	}
	if _, err := ListStored([]string{root}, time.Now(), time.Hour); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if entries, err := ListStored([]string{root}, time.Now(), time.Hour); err != nil || len(entries) != 300 {
			b.Fatalf("ListStored: %d, %v", len(entries), err)
		}
	}
}
