package safefile

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs f and fails the test if it has not returned in a generous bound: a FIFO
// open that blocks would otherwise hang the test binary until its own timeout.
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s blocked", what)
		return nil
	}
}

func wantKind(t *testing.T, err error, kind Kind, path string) {
	t.Helper()
	var safeErr *Error
	if !errors.As(err, &safeErr) || safeErr.Kind != kind {
		t.Fatalf("want a %s error, got %v", kind, err)
	}
	if !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
		t.Errorf("message %q does not name %s on one line", err, path)
	}
}

// planted makes, in a fresh directory, one of each thing a hostile command could leave
// where bwrapkit expects a regular file.
func planted(t *testing.T) (dir string, target string) {
	t.Helper()
	dir = t.TempDir()
	target = filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	listener, err := net.Listen("unix", filepath.Join(dir, "socket"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { listener.Close() })
	return dir, target
}

func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	dir, _ := planted(t)
	cases := []struct {
		name string
		path string
		kind Kind
	}{
		{"symlink to a regular file", filepath.Join(dir, "link"), KindSymlink},
		{"dangling symlink", filepath.Join(dir, "dangling"), KindSymlink},
		{"fifo with no writer", filepath.Join(dir, "fifo"), KindFIFO},
		{"directory", filepath.Join(dir, "dir"), KindDirectory},
		{"socket", filepath.Join(dir, "socket"), KindSocket},
		{"character device", "/dev/null", KindDevice},
		{"the stdin symlink", "/dev/stdin", KindSymlink},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := within(t, "Open("+c.path+")", func() error {
				file, err := Open(c.path)
				if err == nil {
					file.Close()
				}
				return err
			})
			wantKind(t, err, c.kind, c.path)
			err = within(t, "ReadFile("+c.path+")", func() error {
				_, err := ReadFile(c.path, 1<<20)
				return err
			})
			wantKind(t, err, c.kind, c.path)
		})
	}
}

func TestOpenReadsRegularFilesAndFollowsParentLinks(t *testing.T) {
	dir, target := planted(t)
	// A symlink among the parents is the caller's own spelling of the path (/tmp ->
	// /private/tmp): only the last component is never followed.
	if err := os.Symlink(dir, filepath.Join(t.TempDir(), "parent")); err != nil {
		t.Fatal(err)
	}
	data, err := ReadFile(target, 6)
	if err != nil || string(data) != "secret" {
		t.Fatalf("got %q, %v", data, err)
	}
	file, err := Open(target)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	flags, err := fcntlFlags(file)
	if err != nil {
		t.Fatal(err)
	}
	if flags&syscall.O_NONBLOCK != 0 {
		t.Errorf("the descriptor is still O_NONBLOCK")
	}
	if _, err := Open(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: want ErrNotExist, got %v", err)
	}
}

func TestReadFileBoundsTheSize(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big")
	if err := os.WriteFile(path, make([]byte, 1025), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path, 1024); err == nil {
		t.Fatal("a 1025-byte file was read with a 1024-byte limit")
	} else {
		wantKind(t, err, KindTooLarge, path)
		if !strings.Contains(err.Error(), "1024") {
			t.Errorf("message %q does not name the limit", err)
		}
	}
	if data, err := ReadFile(path, 1025); err != nil || len(data) != 1025 {
		t.Errorf("exactly at the limit: %d bytes, %v", len(data), err)
	}
	// /proc files report size 0 and are read through the limit alone.
	if _, err := ReadFile("/proc/self/status", 16); err == nil {
		t.Errorf("a /proc file larger than the limit was read whole")
	}
}
