package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
)

// The /proc paths the sandbox must close, written out here, not read from host.go, so
// an entry dropped there fails. runcDockerMasked and procReadOnlyPinned are runc's
// defaults (libcontainer/specconv's Example) and Docker's (moby's
// daemon/pkg/oci/defaults.go), /proc entries only (bwrapkit binds no /sys); rootOnly are
// the root-only (0400) files that check no capability, which a root caller's command
// would read although neither runtime masks them (docs/kernel-surface.md).
var (
	runcDockerMasked = []string{"/proc/acpi", "/proc/asound", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/sched_debug", "/proc/scsi", "/proc/timer_list", "/proc/timer_stats"}
	rootOnlyMasked = []string{"/proc/kpageflags", "/proc/kpagecount", "/proc/kpagecgroup", "/proc/slabinfo",
		"/proc/vmallocinfo", "/proc/pagetypeinfo"}
	procReadOnlyPinned = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

func TestProcSurfaceListsArePinned(t *testing.T) {
	for _, path := range append(slices.Clone(runcDockerMasked), rootOnlyMasked...) {
		if !slices.Contains(procMasked(), path) {
			t.Errorf("%s is not masked", path)
		}
	}
	for _, path := range procReadOnlyPinned {
		if !slices.Contains(procReadOnly(), path) {
			t.Errorf("%s is not read-only", path)
		}
	}
}

// pinnedOnThisKernel are the pinned masked paths this kernel's /proc has.
func pinnedOnThisKernel(t *testing.T) []string {
	var present []string
	for _, path := range append(slices.Clone(runcDockerMasked), rootOnlyMasked...) {
		if _, err := os.Lstat(path); err == nil {
			present = append(present, path)
		}
	}
	if len(present) == 0 {
		t.Fatal("this kernel's /proc has none of the masked paths: is /proc mounted?")
	}
	return present
}

// TestScanProcFindsThePinnedPaths: each pinned path this kernel has is closed in the
// argv, as a file or a directory.
func TestScanProcFindsThePinnedPaths(t *testing.T) {
	proc := scanProc()
	for _, path := range pinnedOnThisKernel(t) {
		if !slices.Contains(proc.MaskFiles, path) && !slices.Contains(proc.MaskDirs, path) {
			t.Errorf("%s exists here but the sandbox would not mask it (%+v)", path, proc)
		}
	}
}

// TestLiveRootOnlyProcFilesShowNothing: inside, every pinned path this kernel has is a
// mount of its own that shows nothing. As root this is what stops the command reading
// the machine's page flags; as a user the file's mode stops it anyway, so the mount
// is what the test holds there.
func TestLiveRootOnlyProcFilesShowNothing(t *testing.T) {
	paths := pinnedOnThisKernel(t)
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		lines := outputLines(mustRun(t, sandboxRun{bwrap: bwrap}, append([]string{"procshow"}, paths...)...))
		for _, path := range paths {
			if got := lines[path]; got != "nothing" && !strings.HasPrefix(got, "unreadable") {
				t.Errorf("%s inside: %s", path, got)
			}
			if lines["mount "+path] != "yes" {
				t.Errorf("%s has no mount of its own inside (%q)", path, lines["mount "+path])
			}
		}
	})
}

// kernelSurfaceHelper is the inside half of the tests above: "procshow PATH..." prints
// for each path what a read shows ("nothing", "N bytes", "unreadable (errno)") and
// whether it is a mount point.
func kernelSurfaceHelper(args []string) (int, bool) {
	if args[0] != "procshow" {
		return 0, false
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		fmt.Println("mountinfo:", errText(err))
		return 1, true
	}
	points := map[string]bool{}
	for _, line := range strings.Split(string(mountinfo), "\n") {
		if fields := strings.Fields(line); len(fields) > 4 {
			points[fields[4]] = true
		}
	}
	for _, path := range args[1:] {
		fmt.Printf("%s: %s\n", path, shows(path))
		fmt.Printf("mount %s: %s\n", path, map[bool]string{true: "yes", false: "no"}[points[path]])
	}
	return 0, true
}

// shows reads the start of path: the kpage* files take reads of whole 8-byte words, a
// directory is listed.
func shows(path string) string {
	file, err := os.Open(path)
	if err != nil {
		return "unreadable (" + errText(err) + ")"
	}
	defer file.Close()
	if info, err := file.Stat(); err == nil && info.IsDir() {
		names, err := file.Readdirnames(-1)
		if err != nil {
			return "unreadable (" + errText(err) + ")"
		}
		if len(names) == 0 {
			return "nothing"
		}
		return fmt.Sprintf("%d entries", len(names))
	}
	buf := make([]byte, 64)
	n, err := io.ReadFull(file, buf)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "unreadable (" + errText(err) + ")"
	}
	if n == 0 {
		return "nothing"
	}
	return fmt.Sprintf("%d bytes", n)
}
