package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"golang.org/x/sys/unix"
)

// TestVerifyOverlayWaitsForALanding: the gate compares a real overlay with its project
// only while no landing of the caller runs. overlayfs keeps the lower entry it looked up,
// so a file another run landed in the middle of the comparison left the overlay showing
// the old one, and every later look refused the run as a swapped path. Here a landing
// holds the lock and replaces a file meanwhile: the comparison waits for it, then passes.
func TestVerifyOverlayWaitsForALanding(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting an overlay needs root")
	}
	base := livetest.TempDir(t)
	project, mnt := filepath.Join(base, "project"), filepath.Join(base, "mnt")
	layers := filepath.Join(base, "layers") // <caller's layers>/<project>/run-1
	layer := filepath.Join(layers, "project", "run-1")
	upper, work := filepath.Join(layer, "upper"), filepath.Join(layer, "work")
	for _, dir := range []string{project, mnt, upper, work} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"go.mod", "main.go"} {
		if err := os.WriteFile(filepath.Join(project, name), []byte("old\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	options := "lowerdir=" + project + ",upperdir=" + upper + ",workdir=" + work
	if out, err := exec.Command("mount", "-t", "overlay", "overlay", "-o", options, mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount an overlay here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	lower, err := os.Open(project)
	if err != nil {
		t.Fatal(err)
	}
	defer lower.Close()
	inside, err := unix.Open(mnt, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(inside)

	landing, err := os.Open(layers)
	if err != nil {
		t.Fatal(err)
	}
	defer landing.Close()
	if err := unix.Flock(int(landing.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	verified := make(chan error, 1)
	go func() { verified <- verifyOverlay(inside, expectation{path: mnt, lower: lower, upper: upper}) }()
	select {
	case err := <-verified:
		t.Fatalf("compared while a landing held the lock (%v)", err)
	case <-time.After(150 * time.Millisecond):
	}
	// The landing's last step: main.go replaced by a rename (a new inode).
	replacement := filepath.Join(project, ".bwrapkit-landing-1")
	if err := os.WriteFile(replacement, []byte("new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(replacement, filepath.Join(project, "main.go")); err != nil {
		t.Fatal(err)
	}
	unix.Flock(int(landing.Fd()), unix.LOCK_UN)
	select {
	case err := <-verified:
		if err != nil {
			t.Errorf("after the landing: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the comparison never ended after the landing")
	}
}
