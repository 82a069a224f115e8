package pathtree

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWithin(t *testing.T) {
	cases := []struct {
		dir, path string
		want      bool
	}{
		{"/w", "/w", true}, {"/w", "/w/a", true}, {"/w/", "/w/a", true}, {"/", "/etc", true},
		{"/w", "/wx", false}, {"/w", "/", false}, {"", "/w", false}, {"/w", "", false},
	}
	for _, c := range cases {
		if got := Within(c.dir, c.path); got != c.want {
			t.Errorf("Within(%q, %q) = %v, want %v", c.dir, c.path, got, c.want)
		}
	}
}

func TestResolveExistingKeepsTheMissingTail(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	resolvedDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ResolveExisting(filepath.Join(dir, "link", "not", "yet")), filepath.Join(resolvedDir, "real", "not", "yet"); got != want {
		t.Errorf("ResolveExisting = %q, want %q", got, want)
	}
}
