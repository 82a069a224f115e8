package selftest

import (
	"io/fs"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/sandbox"
)

type fakeInfo struct{ dir bool }

func (f fakeInfo) Name() string { return "" }
func (f fakeInfo) Size() int64  { return 0 }
func (f fakeInfo) Mode() fs.FileMode {
	return map[bool]fs.FileMode{true: fs.ModeDir | 0o555, false: 0o400}[f.dir]
}
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.dir }
func (f fakeInfo) Sys() any           { return nil }

// The doctor expects what this kernel has of its own list, whatever the sandbox says.
func TestExpectedProcSurfaceIsTheKernelsShareOfTheList(t *testing.T) {
	kernel := map[string]bool{"/proc/sys": true, "/proc/acpi": true, "/proc/kpageflags": false, "/proc/slabinfo": false,
		"/proc/vmallocinfo": false, "/proc/unrelated": false}
	lstat := func(path string) (fs.FileInfo, error) {
		if dir, ok := kernel[path]; ok {
			return fakeInfo{dir}, nil
		}
		return nil, fs.ErrNotExist
	}
	got := expectedProcSurface(lstat)
	if !slices.Equal(got.ReadOnly, []string{"/proc/sys"}) || !slices.Equal(got.MaskDirs, []string{"/proc/acpi"}) ||
		!slices.Equal(got.MaskFiles, []string{"/proc/kpageflags", "/proc/slabinfo", "/proc/vmallocinfo"}) {
		t.Errorf("got %+v", got)
	}
}

// The root-only files a capability-less root reads, written out once more: dropping one
// from procMustClose fails here.
func TestProcMustCloseHasTheRootOnlyFiles(t *testing.T) {
	_, masked := procMustClose()
	for _, path := range []string{"/proc/kpageflags", "/proc/kpagecount", "/proc/kpagecgroup", "/proc/slabinfo",
		"/proc/vmallocinfo", "/proc/pagetypeinfo", "/proc/kcore", "/proc/keys", "/proc/timer_list"} {
		if !slices.Contains(masked, path) {
			t.Errorf("the doctor does not expect %s masked", path)
		}
	}
}

// The doctor never expects less than the sandbox closes on this host: a new mask in the
// sandbox needs its line here too, or the doctor would not notice it going away.
func TestDoctorExpectsAllTheSandboxCloses(t *testing.T) {
	policy, err := sandbox.NewPolicy(sandbox.Request{Workdir: t.TempDir(), Preview: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed := policy.Host.Proc
	expected := expectedProcSurface(os.Lstat)
	for _, pair := range [][2][]string{{closed.ReadOnly, expected.ReadOnly}, {closed.MaskFiles, expected.MaskFiles}, {closed.MaskDirs, expected.MaskDirs}} {
		for _, path := range pair[0] {
			if !slices.Contains(pair[1], path) {
				t.Errorf("the sandbox closes %s, the doctor does not look at it", path)
			}
		}
	}
}
