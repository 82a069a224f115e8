package install

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/safefile"
)

func TestParseLocation(t *testing.T) {
	cases := []struct {
		raw    string
		remote bool
		path   string
		bad    bool
	}{
		{raw: "/srv/m.json", path: "/srv/m.json"},
		{raw: "./manifest.json", path: "./manifest.json"},
		{raw: "manifest.json", path: "manifest.json"},
		{raw: "./a:b.json", path: "./a:b.json"}, // a colon after the first segment is a path
		{raw: "file:///srv/m%20x.json", path: "/srv/m x.json"},
		{raw: "file://localhost/srv/m.json", path: "/srv/m.json"},
		{raw: "https://mirror.example/m.json", remote: true},
		{raw: "http://127.0.0.1:8080/m.json", remote: true},
		{raw: "file://other/srv/m.json", bad: true},
		{raw: "ftp://mirror/m.json", bad: true},
		{raw: "a:b.json", bad: true}, // taken for a URL with scheme "a": spell it ./a:b.json
	}
	for _, c := range cases {
		got, err := parseLocation(c.raw)
		if c.bad {
			if err == nil {
				t.Errorf("%q: accepted as %+v", c.raw, got)
			}
			continue
		}
		if err != nil || got.remote != c.remote || got.path != c.path {
			t.Errorf("%q: got %+v, %v; want remote %v path %q", c.raw, got, err, c.remote, c.path)
		}
	}
}

// TestReadManifestSaysWhoseFault: a local file's failure is the caller's input, a URL's
// the network's; the caller tells them apart by the type, not by the message.
func TestReadManifestSaysWhoseFault(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for raw, remote := range map[string]bool{fifo: false, "file://" + fifo: false, filepath.Join(dir, "missing"): false, "http://127.0.0.1:1/m.json": true} {
		_, err := ReadManifest(context.Background(), raw)
		var readErr *ManifestReadError
		if !errors.As(err, &readErr) || readErr.Remote != remote {
			t.Errorf("%s: got %v, want a ManifestReadError with Remote %v", raw, err, remote)
		}
	}
	var refused *safefile.Error
	if _, err := ReadManifest(context.Background(), fifo); !errors.As(err, &refused) || refused.Kind != safefile.KindFIFO {
		t.Errorf("a FIFO manifest: %v", err)
	}
}

// TestLockFileIsNeverFollowed: a link planted at <home>/.lock would, with O_CREAT, create
// its target with the installer's rights; a FIFO there must not block.
func TestLockFileIsNeverFollowed(t *testing.T) {
	home := t.TempDir()
	target := filepath.Join(t.TempDir(), "created-through-the-link")
	if err := os.Symlink(target, filepath.Join(home, ".lock")); err != nil {
		t.Fatal(err)
	}
	if _, err := lockHome(context.Background(), home, nil); err == nil {
		t.Fatal("a symlinked lock file was used")
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link's target was created: %v", err)
	}

	fifoHome := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifoHome, ".lock"), 0o600); err != nil {
		t.Fatal(err)
	}
	var local *LocalError
	if _, err := lockHome(context.Background(), fifoHome, nil); !errors.As(err, &local) {
		t.Errorf("a FIFO lock file: want a LocalError, got %v", err)
	}
}
