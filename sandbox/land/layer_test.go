package land

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestStillNamed: a layer locked after its run removed it is not the one at its path (a
// sweep took such a layer for a killed run's).
func TestStillNamed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run-1")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	lock, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if !stillNamed(lock, dir) {
		t.Fatal("a directory in place is not still named")
	}
	if err := os.Rename(dir, dir+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if stillNamed(lock, dir) {
		t.Error("another directory at the name is taken for the locked one")
	}
	if err := os.Remove(dir + ".moved"); err != nil {
		t.Fatal(err)
	}
	if stillNamed(lock, dir+".moved") {
		t.Error("a removed directory is still named")
	}
}

// TestQuarantineOnAFullDisk: on a file system with no byte left, a layer is still kept
// and named (the rename needs no space); only its list of what did not land is missing,
// and the error says so. Before, the list was written first, failed, and the layer was
// neither renamed nor named on stderr.
func TestQuarantineOnAFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting the size-limited tmpfs needs root")
	}
	disk := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", disk).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", disk).Run() })
	layer, err := NewLayer(disk)
	if err != nil {
		t.Fatal(err)
	}
	filler, err := os.Create(filepath.Join(disk, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for _, err = filler.Write(make([]byte, 4096)); err == nil; _, err = filler.Write(make([]byte, 4096)) {
	}
	filler.Close()
	kept, err := layer.Quarantine(nil, "landing stopped: no space left on device")
	if kept == "" {
		t.Fatalf("the layer was not kept: %v", err)
	}
	if info, statErr := os.Stat(filepath.Join(kept, "upper")); statErr != nil || !info.IsDir() {
		t.Errorf("%s holds no layer: %v", kept, statErr)
	}
	if err == nil || !strings.Contains(err.Error(), "list") {
		t.Errorf("err = %v, want the missing list named", err)
	}
}

// TestLandMakesItsRulesUnderTheLock: the rules read the project (its branch, what names
// exist), so they are made once the landing lock is held, after the landing before.
func TestLandMakesItsRulesUnderTheLock(t *testing.T) {
	layer, _, fd := fixture(t)
	write(t, filepath.Join(layer.Upper, "mine"), "mine\n")
	other, err := lockLandings(LandingsLock(layer.Dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	var released atomic.Bool
	madeEarly := make(chan bool, 1)
	landed := make(chan error, 1)
	go func() {
		_, err := Land(layer, fd, Options{MakeRules: func() Rules {
			madeEarly <- !released.Load()
			return Rules{CallerGid: uint32(os.Getegid()), StartedNS: 1 << 62}
		}})
		landed <- err
	}()
	time.Sleep(100 * time.Millisecond)
	released.Store(true)
	other()
	if err := <-landed; err != nil {
		t.Fatal(err)
	}
	select {
	case early := <-madeEarly:
		if early {
			t.Error("the rules were made while another landing held the lock")
		}
	default:
		t.Error("the landing never made its rules")
	}
}
