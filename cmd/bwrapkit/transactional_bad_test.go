package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
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
	if err := os.WriteFile(filepath.Join(project, "kept"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `echo new > kept; head -c 2097152 /dev/zero > big; echo small > small`
	status, _, stderr := runIn(t, nil, project, home, "run", "--workdir", project, "--bwrap", bwrap, "--", "sh", "-c", script)
	if status != 123 || !strings.Contains(stderr, "free") || !strings.Contains(stderr, "the project is as it was") {
		t.Errorf("exit %d, want 123 naming the space:\n%s", status, stderr)
	}
	entries, _ := os.ReadDir(project)
	if len(entries) != 1 {
		t.Errorf("the project holds %d entries, want only kept: %v", len(entries), entries)
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
