package home

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTakeLayerOneMountPerUpper: the first run takes the project's layer; a run that
// starts meanwhile gets an upper and work of its own, which Release removes; once the
// first releases, the next run takes the project's layer.
func TestTakeLayerOneMountPerUpper(t *testing.T) {
	home := filepath.Join(t.TempDir(), "proj-0123")
	first, err := TakeLayer(home, "go-build")
	if err != nil {
		t.Fatal(err)
	}
	base := home + LayersSuffix + "/go-build"
	if first.Upper != base+"/upper" || first.Work != base+"/work" || first.Apart {
		t.Fatalf("first run: %+v, want the project's layer", first)
	}
	second, err := TakeLayer(home, "go-build")
	if err != nil {
		t.Fatal(err)
	}
	if second.Upper == first.Upper || second.Work == first.Work || !strings.HasPrefix(second.Upper, base+"/"+runLayerPrefix) {
		t.Fatalf("second run at once: %+v, want an upper and work of its own under %s", second, base)
	}
	if !second.Apart {
		t.Error("the second run's layer is not marked apart")
	}
	for _, dir := range []string{second.Upper, second.Work} {
		if info, err := os.Lstat(dir); err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want a 0700 directory", dir, info, err)
		}
	}
	os.WriteFile(filepath.Join(second.Upper, "added"), []byte("x"), 0o600)
	second.Release()
	second.Release() // a no-op
	if _, err := os.Lstat(filepath.Dir(second.Upper)); !os.IsNotExist(err) {
		t.Errorf("the second run's own layer is left after Release: %v", err)
	}
	first.Release()
	third, err := TakeLayer(home, "go-build")
	if err != nil {
		t.Fatal(err)
	}
	defer third.Release()
	if third.Upper != first.Upper || third.Apart {
		t.Errorf("after the first released: %+v, want the project's layer", third)
	}
}

// TestTakeLayerSweepsAbandoned: a run layer left unlocked by a bwrapkit that died is
// removed by the next run that takes the project's layer, once old enough; a young one
// (a run between making and locking it) and a locked one are kept.
func TestTakeLayerSweepsAbandoned(t *testing.T) {
	home := filepath.Join(t.TempDir(), "proj-0123")
	holder, err := TakeLayer(home, "npm")
	if err != nil {
		t.Fatal(err)
	}
	live, err := TakeLayer(home, "npm") // locked while the test runs
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release()
	base := home + LayersSuffix + "/npm"
	abandoned, young := filepath.Join(base, runLayerPrefix+"dead"), filepath.Join(base, runLayerPrefix+"young")
	for _, dir := range []string{abandoned + "/work/work", young + "/upper"} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(abandoned+"/work/work", 0) // as overlayfs leaves it
	old := time.Now().Add(-2 * abandonedRunLayer)
	for _, dir := range []string{abandoned, filepath.Dir(live.Upper)} {
		os.Chtimes(dir, old, old)
	}
	holder.Release()
	next, err := TakeLayer(home, "npm")
	if err != nil {
		t.Fatal(err)
	}
	defer next.Release()
	if _, err := os.Lstat(abandoned); !os.IsNotExist(err) {
		t.Errorf("an abandoned run layer was kept: %v", err)
	}
	for _, dir := range []string{young, live.Upper} {
		if _, err := os.Lstat(dir); err != nil {
			t.Errorf("%s was swept: %v", dir, err)
		}
	}
}

// TestTakeLayerRefusesALink: a layer directory that is a link (planted to lead elsewhere)
// is refused, never written through.
func TestTakeLayerRefusesALink(t *testing.T) {
	home := filepath.Join(t.TempDir(), "proj-0123")
	elsewhere := t.TempDir()
	os.MkdirAll(home+LayersSuffix, 0o700)
	os.Symlink(elsewhere, home+LayersSuffix+"/pip")
	if use, err := TakeLayer(home, "pip"); err == nil {
		use.Release()
		t.Fatal("a layer reached through a link was taken")
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("the link's target was written: %v", entries)
	}
}
