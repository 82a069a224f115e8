package probe

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNetAllowWithFileOps: the net-allow probe does the file operations it is given (the
// run it shares with workdir-vetting) and reports them, whatever the proxy does: here
// there is none, and the hand-over fails.
func TestNetAllowWithFileOps(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	got := observeNetAllow([]string{filepath.Join(dir, "no-socket"), "127.0.0.1:0", "http://allowed.invalid/", "http://denied.invalid/", "mkdir:sub", "create:sub/honest"})
	if got.FS == nil || len(got.FS.Ops) != 2 || got.FS.Ops[0].Error != "" || got.FS.Ops[1].Error != "" {
		t.Fatalf("file operations: %+v", got.FS)
	}
	if _, err := os.Stat(filepath.Join(dir, "sub", "honest")); err != nil {
		t.Errorf("the file was not made: %v", err)
	}
	if got.Error == "" || got.Allowed.Status != 0 {
		t.Errorf("with no proxy to hand the listener to: %+v", got)
	}
	if plain := observeNetAllow([]string{filepath.Join(dir, "no-socket"), "127.0.0.1:0", "http://a.invalid/", "http://d.invalid/"}); plain.FS != nil {
		t.Errorf("no operations asked, yet %+v", plain.FS)
	}
}
