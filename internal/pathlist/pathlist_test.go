package pathlist

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

func TestEntries(t *testing.T) {
	got := Entries(":/bin:bin:./x:/usr/bin:")
	want := []Entry{{"", SkippedEmpty}, {"/bin", ""}, {"bin", SkippedRelative}, {"./x", SkippedRelative}, {"/usr/bin", ""}, {"", SkippedEmpty}}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if len(Entries("")) != 0 {
		t.Errorf("an empty PATH has no entries")
	}
}

func TestLook(t *testing.T) {
	executable := map[string]bool{"/usr/bin/tool": true, "/opt/bin/tool": true, "bin/tool": true, "tool": true}
	isExecutable := func(path string) bool { return executable[path] }
	cases := []struct {
		list, want string
		found      bool
	}{
		{"/usr/bin:/opt/bin", "/usr/bin/tool", true},
		{"/opt/bin:/usr/bin", "/opt/bin/tool", true},
		{"bin::/opt/bin", "/opt/bin/tool", true}, // relative and empty entries never match
		{"bin:", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		got, found := Look(c.list, "tool", isExecutable)
		if got != c.want || found != c.found {
			t.Errorf("Look(%q) = %q, %v; want %q, %v", c.list, got, found, c.want, c.found)
		}
	}
}

func TestIsExecutable(t *testing.T) {
	dir := t.TempDir()
	livetest.WriteProgram(filepath.Join(dir, "x"), nil, 0o755)
	os.WriteFile(filepath.Join(dir, "noexec"), nil, 0o644)
	os.Symlink(filepath.Join(dir, "x"), filepath.Join(dir, "link"))
	for name, want := range map[string]bool{"x": true, "noexec": false, "link": true, ".": false, "missing": false} {
		if got := IsExecutable(filepath.Join(dir, name)); got != want {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
}
