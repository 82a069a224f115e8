package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func onlyEntries(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, entry := range entries {
		names = append(names, entry.Name())
	}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("%s holds %v, want %v (a temp file left behind?)", dir, names, want)
	}
}

// TestWriteFileReplacesWhatWasPlanted: a symlink at the name is replaced (its target is
// untouched), a FIFO is replaced without blocking, a directory is an error.
func TestWriteFileReplacesWhatWasPlanted(t *testing.T) {
	for _, name := range []string{"link", "dangling", "fifo", "socket", "target"} {
		t.Run(name, func(t *testing.T) {
			dir, target := planted(t)
			path := filepath.Join(dir, name)
			if err := within(t, "WriteFile("+path+")", func() error { return WriteFile(path, []byte("report"), 0o640) }); err != nil {
				t.Fatal(err)
			}
			info, err := os.Lstat(path)
			if err != nil || !info.Mode().IsRegular() || info.Mode().Perm() != 0o640 {
				t.Fatalf("%s is %v, %v; want a regular file, mode 0640", path, info.Mode(), err)
			}
			if data, _ := os.ReadFile(path); string(data) != "report" {
				t.Errorf("%s holds %q", path, data)
			}
			if name != "target" {
				if data, _ := os.ReadFile(target); string(data) != "secret" {
					t.Errorf("the link's target was written: %q", data)
				}
			}
			if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the dangling link's target was created")
			}
			entries, _ := os.ReadDir(dir)
			for _, entry := range entries {
				if strings.HasPrefix(entry.Name(), tempPrefix) {
					t.Errorf("temp file %s left behind", entry.Name())
				}
			}
		})
	}
	dir, _ := planted(t)
	wantKind(t, WriteFile(filepath.Join(dir, "dir"), []byte("x"), 0o600), KindDirectory, filepath.Join(dir, "dir"))
	onlyEntries(t, filepath.Join(dir, "dir"))
}

func TestWriteFileModeIgnoresUmaskAndOwnerIsCaller(t *testing.T) {
	dir := t.TempDir()
	// umask is process-wide: 0o077 here could only tighten, and the write must still
	// produce exactly the mode asked for.
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	path := filepath.Join(dir, "file")
	if err := WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Lstat(path)
	stat := info.Sys().(*syscall.Stat_t)
	if info.Mode().Perm() != 0o644 || int(stat.Uid) != os.Geteuid() || info.Size() != 0 {
		t.Errorf("mode %v uid %d size %d", info.Mode(), stat.Uid, info.Size())
	}
}

func TestWriteFileBadNamesAndMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, name := range []string{"", ".", "..", "a/b", "../escape", "nul\x00"} {
		var safeErr *Error
		if err := d.WriteFile(name, []byte("x"), 0o600); !errors.As(err, &safeErr) || safeErr.Kind != KindBadName {
			t.Errorf("name %q: want a bad-name error, got %v", name, err)
		}
	}
	if err := WriteFile(dir+"/", []byte("x"), 0o600); err == nil {
		t.Errorf("a path ending in / was written")
	}
	if err := WriteFile(filepath.Join(dir, "no", "such", "file"), []byte("x"), 0o600); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing directory: want ErrNotExist, got %v", err)
	}
	onlyEntries(t, dir)
}

// TestDirIsResolvedOnce is the --report race: the directory is opened before the command
// runs, the command then moves it away and puts a symlink to somewhere else in its place.
// The file still lands in the directory that was opened.
func TestDirIsResolvedOnce(t *testing.T) {
	base := t.TempDir()
	reports := filepath.Join(base, "reports")
	elsewhere := filepath.Join(base, "elsewhere")
	for _, dir := range []string{reports, elsewhere} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	d, err := OpenDir(reports)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	moved := filepath.Join(base, "moved")
	if err := os.Rename(reports, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, reports); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteFile("report.json", []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	onlyEntries(t, elsewhere)
	onlyEntries(t, moved, "report.json")
}

func TestOpenDirRefusesNonDirectories(t *testing.T) {
	dir, target := planted(t)
	for _, path := range []string{target, filepath.Join(dir, "fifo"), filepath.Join(dir, "socket"), "/dev/null"} {
		err := within(t, "OpenDir("+path+")", func() error {
			d, err := OpenDir(path)
			if err == nil {
				d.Close()
			}
			return err
		})
		wantKind(t, err, KindNotDirectory, path)
	}
	if _, err := OpenDir(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.CheckWritable(); err != nil {
		t.Fatal(err)
	}
	onlyEntries(t, dir)

	// /proc refuses file creation to root as well: the check can fail for every caller.
	proc, err := OpenDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Close()
	if err := proc.CheckWritable(); err == nil || !strings.Contains(err.Error(), "/proc") {
		t.Errorf("/proc: want an error naming it, got %v", err)
	}
	if os.Geteuid() != 0 {
		readOnly := filepath.Join(dir, "ro")
		os.Mkdir(readOnly, 0o500)
		d, err := OpenDir(readOnly)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := d.CheckWritable(); !errors.Is(err, os.ErrPermission) {
			t.Errorf("a 0500 directory: want a permission error, got %v", err)
		}
	}
}
