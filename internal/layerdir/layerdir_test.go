package layerdir

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRemove: a layer as overlayfs and a command leave it (work/work mode 0, a directory
// its owner cannot list, a link out) goes whole, and the link's target stays.
func TestRemove(t *testing.T) {
	outside := t.TempDir()
	kept := filepath.Join(outside, "kept")
	os.WriteFile(kept, []byte("x"), 0o600)
	dir := filepath.Join(t.TempDir(), "layer")
	for _, sub := range []string{"work/work", "upper/closed"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "upper/closed/file"), []byte("x"), 0o600)
	os.Symlink(outside, filepath.Join(dir, "upper/out"))
	os.Chmod(filepath.Join(dir, "upper/closed"), 0)
	os.Chmod(filepath.Join(dir, "work/work"), 0)
	if err := Remove(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is left: %v", dir, err)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("the link's target went too: %v", err)
	}
}
