package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/sandbox"
	"github.com/bwrapkit/bwrapkit/sandbox/land"
	"golang.org/x/sys/unix"
)

// Bad input to the landing, through the built binary on the pinned bwrap: each must give
// a clear error, land nothing and leave the project as it was.

func staticBwrap(t *testing.T) string {
	t.Helper()
	livetest.SystemBwrap(t)
	bwrap := filepath.Join(livetest.CachedBwraps(), "bwrap-0.12.0")
	if _, err := os.Stat(bwrap); err != nil {
		livetest.Skip(t, "no "+bwrap)
	}
	return bwrap
}

// TestLiveTooManyFilesLandNothing: a command that makes more files than bwrapkit vets
// gets them kept, not landed, and exit 123. The bound is lowered to 20,000
// (BWRAPKIT_LAND_MAX_ENTRIES): a quarter of a million files takes minutes to make.
func TestLiveTooManyFilesLandNothing(t *testing.T) {
	bwrap := staticBwrap(t)
	func(test func(t *testing.T, prefix []string, project, home string)) {
		base := livetest.TempDir(t)
		os.Chmod(base, 0o755)
		project, home := filepath.Join(base, "project"), filepath.Join(base, "home")
		for _, dir := range []string{project, home} {
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		test(t, nil, project, home)
	}(func(t *testing.T, prefix []string, project, home string) {
		if err := os.WriteFile(filepath.Join(project, "kept"), []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chown(filepath.Join(project, "kept"), uidOf(prefix), uidOf(prefix))
		script := `echo new > kept; mkdir many && cd many && seq 1 25000 | xargs touch`
		status, _, stderr := runInEnv(t, prefix, project, home, []string{"BWRAPKIT_LAND_MAX_ENTRIES=20000"}, "run", "--workdir", project, "--bwrap", bwrap, "--", "sh", "-c", script)
		if status != 123 || !strings.Contains(stderr, "exceed 20000 entries") || !strings.Contains(stderr, "nothing was landed") {
			t.Errorf("exit %d, want 123 with the bound named:\n%s", status, stderr)
		}
		if got, _ := os.ReadFile(filepath.Join(project, "kept")); string(got) != "old\n" {
			t.Errorf("kept = %q: something landed", got)
		}
		if _, err := os.Lstat(filepath.Join(project, "many")); err == nil {
			t.Error("the many files' directory landed")
		}
		removeLayers(t, home)
	})
}

// TestLiveFullProjectFileSystemLandsNothing: the project is on a 1 MiB tmpfs and the
// layer elsewhere, so landing must copy; the command's 2 MiB do not fit, and nothing
// lands (no half-copied file, no temporary name left).
func TestLiveFullProjectFileSystemLandsNothing(t *testing.T) {
	bwrap := staticBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("mounting the size-limited tmpfs needs root")
	}
	base := livetest.TempDir(t)
	os.Chmod(base, 0o755)
	project, home := filepath.Join(base, "project"), filepath.Join(base, "home")
	for _, dir := range []string{project, home} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", project).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", project).Run() })
	landsNothing(t, bwrap, project, home, `echo new > kept; head -c 2097152 /dev/zero > big; echo small > small`, "free")
}

// TestLiveNewEntriesBeyondTheDiskLandNothing: project and layer share a small tmpfs, so
// files move in one rename, except a file with hard links, which lands as a copy per
// name; symlinks are made anew. A landing whose new entries need more bytes or inodes
// than are free lands nothing, and the disk is not filled. (The landing before counted
// nothing on one file system: it stopped at the full disk with the first names landed,
// and left it full.) A sparse 1 GiB file under two names fits, and lands as two sparse
// files.
func TestLiveNewEntriesBeyondTheDiskLandNothing(t *testing.T) {
	bwrap := staticBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("mounting the size-limited tmpfs needs root")
	}
	t.Run("hard-linked bytes", func(t *testing.T) {
		project, home := smallDisk(t, "size=16m")
		landsNothing(t, bwrap, project, home, `echo new > kept; head -c 4194304 /dev/urandom > big; ln big big2; ln big big3; echo small > small`, "bytes")
		status, _, stderr := runIn(t, nil, project, home, "run", "--workdir", project, "--bwrap", bwrap, "--", "sh", "-c", `truncate -s 1G sparse && ln sparse sparse2`)
		if status != 0 {
			t.Fatalf("the sparse file's run: exit %d\n%s", status, stderr)
		}
		for _, name := range []string{"sparse", "sparse2"} {
			var stat unix.Stat_t
			if err := unix.Stat(filepath.Join(project, name), &stat); err != nil {
				t.Fatalf("%s did not land: %v", name, err)
			}
			if stat.Size != 1<<30 || stat.Nlink != 1 || stat.Blocks*512 > 1<<20 {
				t.Errorf("%s: size %d, %d links, %d bytes occupied; want 1 GiB of holes, a file of its own", name, stat.Size, stat.Nlink, stat.Blocks*512)
			}
		}
		removeLayers(t, home)
	})
	t.Run("long symlinks", func(t *testing.T) {
		project, home := smallDisk(t, "size=16m")
		landsNothing(t, bwrap, project, home, `echo new > kept; t=$(head -c 3000 /dev/zero | tr '\0' x); for i in $(seq 2500); do ln -s $t s$i; done`, "bytes")
	})
	t.Run("hard-linked inodes", func(t *testing.T) {
		project, home := smallDisk(t, "size=16m,nr_inodes=400")
		landsNothing(t, bwrap, project, home, `echo new > kept; echo one > f; for i in $(seq 300); do ln f f$i; done`, "inodes")
	})
}

// smallDisk mounts a tmpfs with options for one test, holding its project and the HOME
// whose cache holds the layers (one file system: files land by rename).
func smallDisk(t *testing.T, options string) (project, home string) {
	t.Helper()
	disk := livetest.TempDir(t)
	os.Chmod(disk, 0o755)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", options+",mode=0755", "tmpfs", disk).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", disk).Run() })
	project, home = filepath.Join(disk, "project"), filepath.Join(disk, "home")
	for _, dir := range []string{project, home} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return project, home
}

// landsNothing runs script, which writes the project's file kept and more, in project
// (which holds only kept, "old"), and wants exit 123 with stderr naming cause, and the
// project as it was.
func landsNothing(t *testing.T, bwrap, project, home, script, cause string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(project, "kept"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	status, _, stderr := runIn(t, nil, project, home, "run", "--workdir", project, "--bwrap", bwrap, "--", "sh", "-c", script)
	if status != 123 || !strings.Contains(stderr, cause) || !strings.Contains(stderr, "the project is as it was") {
		t.Errorf("exit %d, want 123 naming %q:\n%s", status, cause, stderr)
	}
	entries, _ := os.ReadDir(project)
	if len(entries) != 1 {
		t.Errorf("the project holds %d entries, want only kept: %v", len(entries), entries[:min(len(entries), 5)])
	}
	if got, _ := os.ReadFile(filepath.Join(project, "kept")); string(got) != "old\n" {
		t.Errorf("kept = %q", got)
	}
	removeLayers(t, home)
}

// removeLayers removes the quarantines a test's runs kept (overlayfs leaves its work
// directory mode 0000, so permissions are opened first).
func removeLayers(t *testing.T, home string) {
	t.Helper()
	layers := filepath.Join(home, ".cache", "bwrapkit", "layers")
	exec.Command("chmod", "-R", "u+rwx", layers).Run()
	os.RemoveAll(layers)
}

// TestPrintLandingSaysWhatAStoppedLandingLanded: a landing that stopped after its first
// changes says what landed and where the rest is, never "nothing landed" (the line
// before said that of a landing that had landed two files).
func TestPrintLandingSaysWhatAStoppedLandingLanded(t *testing.T) {
	for _, c := range []struct {
		changes land.Changes
		want    string
	}{
		{land.Changes{Added: 2, Modified: 1}, "bwrapkit: landing stopped partway: landed 2 added, 1 modified, 0 deleted (each file whole, old or new); the rest is kept in /q\n"},
		{land.Changes{}, "bwrapkit: nothing landed; the command's changes are kept in /q\n"},
	} {
		var stderr strings.Builder
		opts := &runOptions{streams: streams{Err: &stderr}}
		printLanding(opts, sandbox.Result{WorkdirMode: sandbox.WorkdirTransactional, Started: true, Changes: c.changes, Quarantine: "/q"})
		if stderr.String() != c.want {
			t.Errorf("%+v: %q, want %q", c.changes, stderr.String(), c.want)
		}
	}
}

// TestPrintLandingBoundsTheRefusedLines: stderr names the first 100 refused entries and
// says where all of them are listed; a command's 30,000 refused directories printed
// 30,000 lines.
func TestPrintLandingBoundsTheRefusedLines(t *testing.T) {
	var refused []sandbox.Refusal
	for i := range 150 {
		refused = append(refused, sandbox.Refusal{Path: fmt.Sprintf("d%d", i), Rule: "world-writable"})
	}
	var stderr strings.Builder
	printLanding(&runOptions{streams: streams{Err: &stderr}}, sandbox.Result{WorkdirMode: sandbox.WorkdirTransactional, Started: true, Refused: refused, Quarantine: "/q"})
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	if len(lines) != 102 || lines[100] != "bwrapkit: ... and 50 more refused (all of them in /q/REFUSED)" || !strings.HasPrefix(lines[99], "bwrapkit: refused d99: ") {
		t.Errorf("%d lines; 99 to 101:\n%s", len(lines), strings.Join(lines[min(99, len(lines)):], "\n"))
	}
}

// TestLiveProjectOnAnotherFileSystemRuns: the project on a tmpfs, bwrapkit's cache (and
// so the run's layer) on another file system. overlayfs then numbers the project's
// directories itself, and the gate refused every such run of a project with a
// subdirectory as a swapped path (125); it now knows a directory there by its times,
// mode and links. The run sees the project, and its change lands by copying.
func TestLiveProjectOnAnotherFileSystemRuns(t *testing.T) {
	bwrap := staticBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("mounting the tmpfs needs root")
	}
	project, _ := smallDisk(t, "size=16m")
	home := livetest.TempDir(t)
	os.Chmod(home, 0o755)
	if err := os.MkdirAll(filepath.Join(project, "src", "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "src", "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	status, stdout, stderr := runIn(t, nil, project, home, "run", "--workdir", project, "--bwrap", bwrap, "--", "sh", "-c", "cat src/main.go && echo new > src/pkg/added")
	if status != 0 || stdout != "package main\n" {
		t.Fatalf("exit %d, stdout %q, want 0 and the project's file\n%s", status, stdout, stderr)
	}
	if got, err := os.ReadFile(filepath.Join(project, "src", "pkg", "added")); err != nil || string(got) != "new\n" {
		t.Errorf("src/pkg/added = %q, %v: the change did not land", got, err)
	}
	removeLayers(t, home)
}
