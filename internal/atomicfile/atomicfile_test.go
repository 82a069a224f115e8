package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
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
	received := make(chan string, 1)
	go func() {
		data, _ := os.ReadFile(fifo)
		received <- string(data)
	}()
	if err := Write(fifo, []byte("through the pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Lstat(fifo); info.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the fifo was replaced: %v", info.Mode()) // before waiting on a reader that never gets data
	}
	if got := <-received; got != "through the pipe" {
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

func TestWriteFollowsSymlinksAndRefusesDirectories(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.json")
	os.WriteFile(real, []byte("old"), 0o644)
	link := filepath.Join(dir, "link.json")
	os.Symlink(real, link)
	if err := Write(link, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Lstat(link); info.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a file")
	}
	if data, _ := os.ReadFile(real); string(data) != "new" {
		t.Errorf("target holds %q", data)
	}
	if err := Write(dir, []byte("x"), 0o644); err == nil {
		t.Errorf("writing over a directory succeeded")
	}
}
