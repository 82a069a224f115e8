package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/internal/safefile"
)

func TestWriteReplacesAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o640); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	info, _ := os.Stat(path)
	if string(data) != "new" || info.Mode().Perm() != 0o640 {
		t.Fatalf("got %q mode %v", data, info.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temp file left behind: %v", entries)
	}
}

func TestWriteIntoMissingDirectoryFailsCleanly(t *testing.T) {
	dir := t.TempDir()
	if err := Write(filepath.Join(dir, "no", "such", "file"), []byte("x"), 0o644); err == nil {
		t.Fatal("want an error for a missing directory")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}

// TestWriteLeavesSpecialFilesInPlace: `--output /dev/null` once renamed a regular file over
// /dev/null. Devices, pipes and links must survive as what they are.
func TestWriteLeavesSpecialFilesInPlace(t *testing.T) {
	dir := t.TempDir()

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The reader is open before the write, as `cat fifo &` would be; a nonblocking open
	// does not wait for the writer.
	readFD, err := syscall.Open(fifo, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	fifoReader := os.NewFile(uintptr(readFD), fifo)
	defer fifoReader.Close()
	if err := Write(fifo, []byte("through the pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Lstat(fifo); info.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the fifo was replaced: %v", info.Mode())
	}
	if got, _ := io.ReadAll(fifoReader); string(got) != "through the pipe" {
		t.Errorf("reader got %q", got)
	}

	// /dev/stdout when stdout is a pipe: /proc/self/fd/N names "pipe:[...]", no real path.
	reader, writer, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if err := Write(fmt.Sprintf("/proc/self/fd/%d", writer.Fd()), []byte("to stdout"), 0o644); err != nil {
		t.Fatal(err)
	}
	writer.Close()
	if data, _ := io.ReadAll(reader); string(data) != "to stdout" {
		t.Errorf("pipe got %q", data)
	}

	if os.Geteuid() == 0 {
		null := filepath.Join(dir, "null")
		if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			t.Fatal(err)
		}
		if err := Write(null, []byte("discarded"), 0o644); err != nil {
			t.Fatal(err)
		}
		if info, _ := os.Lstat(null); info.Mode()&os.ModeCharDevice == 0 {
			t.Errorf("the null device was replaced by a %v", info.Mode())
		}
	}
}

// TestWriteNeverFollowsALinkAtTheName: a link planted where an output goes (report.json ->
// ~/.bashrc) is replaced by the file; its target keeps its content.
func TestWriteNeverFollowsALinkAtTheName(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.json")
	os.WriteFile(real, []byte("old"), 0o644)
	link := filepath.Join(dir, "link.json")
	os.Symlink(real, link)
	if err := Write(link, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Lstat(link); !info.Mode().IsRegular() || info.Mode().Perm() != 0o600 {
		t.Errorf("the link is now %v, want a regular file mode 0600", info.Mode())
	}
	if data, _ := os.ReadFile(real); string(data) != "old" {
		t.Errorf("the link's target was written: %q", data)
	}
	// A link to /dev/null is not /dev/null: replaced too, so a link cannot lead a write
	// to any device.
	nullLink := filepath.Join(dir, "null-link")
	os.Symlink("/dev/null", nullLink)
	if err := Write(nullLink, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Lstat(nullLink); !info.Mode().IsRegular() {
		t.Errorf("the link to /dev/null is %v", info.Mode())
	}
	if err := Write(dir, []byte("x"), 0o644); err == nil {
		t.Errorf("writing over a directory succeeded")
	}
}

// TestWriteRefusesDisksAndFIFOsWithoutReaders: a block device is never written (as root
// that would be a disk), and a FIFO nobody reads is an error at once, not a hang.
func TestWriteRefusesDisksAndFIFOsWithoutReaders(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Write(fifo, []byte("x"), 0o644) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no reader") {
			t.Errorf("want a no-reader error, got %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Write blocked on a FIFO with no reader")
	}
	if info, _ := os.Lstat(fifo); info.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the fifo was replaced")
	}
	if os.Geteuid() == 0 {
		disk := filepath.Join(dir, "loop")
		// 7:0 is /dev/loop0's number; the node is made here, never opened.
		if err := syscall.Mknod(disk, syscall.S_IFBLK|0o600, int(unix.Mkdev(7, 0))); err != nil {
			t.Fatal(err)
		}
		var safeErr *safefile.Error
		if err := Write(disk, []byte("x"), 0o644); !errors.As(err, &safeErr) || safeErr.Kind != safefile.KindDevice {
			t.Errorf("a block device: want a device error, got %v", err)
		}
		if info, _ := os.Lstat(disk); info.Mode()&os.ModeDevice == 0 {
			t.Errorf("the block device was replaced")
		}
	}
}

func TestIsStream(t *testing.T) {
	cases := []struct {
		mode         uint32
		major, minor uint32
		want         bool
	}{
		{unix.S_IFIFO, 0, 0, true},
		{unix.S_IFCHR, 1, 3, true},     // /dev/null
		{unix.S_IFCHR, 1, 1, false},    // /dev/mem
		{unix.S_IFCHR, 1, 5, false},    // /dev/zero
		{unix.S_IFCHR, 10, 130, false}, // /dev/watchdog
		{unix.S_IFCHR, 136, 0, true},   // /dev/pts/0
		{unix.S_IFCHR, 4, 64, true},    // /dev/ttyS0
		{unix.S_IFCHR, 5, 0, true},     // /dev/tty
		{unix.S_IFCHR, 5, 2, false},    // /dev/ptmx
		{unix.S_IFBLK, 8, 0, false},    // /dev/sda
		{unix.S_IFREG, 0, 0, false},
		{unix.S_IFSOCK, 0, 0, false},
	}
	for _, c := range cases {
		stat := unix.Stat_t{Mode: c.mode, Rdev: unix.Mkdev(c.major, c.minor)}
		if got := isStream(stat); got != c.want {
			t.Errorf("mode %o %d:%d: got %v, want %v", c.mode, c.major, c.minor, got, c.want)
		}
	}
}

func TestOwnDescriptor(t *testing.T) {
	cases := map[string]int{"/dev/stdout": 1, "/dev/stderr": 2, "/dev/fd/7": 7, "/proc/self/fd/12": 12, "/dev//stdout": 1}
	for path, want := range cases {
		if fd, ok := ownDescriptor(path); !ok || fd != want {
			t.Errorf("%s: got %d %v, want %d", path, fd, ok, want)
		}
	}
	for _, path := range []string{"/dev/stdin/x", "/dev/fd/-1", "/dev/fd/07", "/dev/fd/x", "/proc/1/fd/1", "/tmp/dev/stdout", "stdout"} {
		if fd, ok := ownDescriptor(path); ok {
			t.Errorf("%s: taken for descriptor %d", path, fd)
		}
	}
}
