package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// The kernel surface and the ephemeral HOME as a user meets them: the built binary,
// each real bwrap, judged by what the command could read and what reached the host.

// rootOnlyProcFiles are root-only (0400) /proc files that check no capability: a root
// caller's command, uid 0 inside, reads them unless they are masked. Written out here,
// not taken from the sandbox.
var rootOnlyProcFiles = []string{"/proc/kpageflags", "/proc/kpagecount", "/proc/kpagecgroup", "/proc/slabinfo",
	"/proc/vmallocinfo", "/proc/pagetypeinfo"}

// TestAttackRootOnlyProcFilesAreMasked: as root, dd reads 8 bytes of the machine's page
// flags from an unmasked /proc/kpageflags; inside, nothing comes out, and each file is a
// mount of its own (which is what holds as a user too, whose reads the file mode stops).
func TestAttackRootOnlyProcFilesAreMasked(t *testing.T) {
	var present []string
	for _, path := range rootOnlyProcFiles {
		if _, err := os.Lstat(path); err == nil {
			present = append(present, path)
		}
	}
	if len(present) == 0 {
		t.Skip("this kernel's /proc has none of the root-only files")
	}
	for _, bwrap := range livetest.Bwraps(t) {
		t.Run(bwrap.Name, func(t *testing.T) {
			environ, _ := attackEnv(t, bwrap.Path)
			workdir := livetest.TempDir(t)
			for _, path := range present {
				got := binaryRun(t, environ, "run", "--workdir", workdir, "--", "dd", "if="+path, "bs=8", "count=1", "status=none")
				if got.stdout != "" {
					t.Errorf("%s: the command read %d bytes of it (status %d)", path, len(got.stdout), got.status)
				}
			}
			got := binaryRun(t, environ, "run", "--workdir", workdir, "--", "cat", "/proc/self/mountinfo")
			if got.status != 0 {
				t.Fatalf("mountinfo: status %d: %s", got.status, got.stderr)
			}
			points := map[string]bool{}
			for _, line := range strings.Split(got.stdout, "\n") {
				if fields := strings.Fields(line); len(fields) > 4 {
					points[fields[4]] = true
				}
			}
			for _, path := range present {
				if !points[path] {
					t.Errorf("%s has no mount of its own inside", path)
				}
			}
		})
	}
}

// TestRunReadWriteWithoutACacheDirectory: a caller with no home and no cache directory
// (nobody's HOME=/nonexistent) gets an ephemeral HOME, and --rw still works: the HOME is
// no empty path that every directory would lie inside.
func TestRunReadWriteWithoutACacheDirectory(t *testing.T) {
	for _, bwrap := range livetest.Bwraps(t) {
		t.Run(bwrap.Name, func(t *testing.T) {
			workdir, extra := livetest.TempDir(t), livetest.TempDir(t)
			environ := []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "BWRAPKIT_BWRAP=" + bwrap.Path, "TMPDIR=" + livetest.TempDir(t)}
			target := filepath.Join(extra, "f")
			got := binaryRun(t, environ, "run", "--workdir", workdir, "--rw", extra, "--",
				"sh", "-c", `echo "$HOME" > "$1"`, "sh", target)
			if got.status != 0 {
				t.Fatalf("status %d: %s", got.status, got.stderr)
			}
			if data, err := os.ReadFile(target); err != nil || strings.TrimSpace(string(data)) != "/tmp/home" {
				t.Errorf("%s on the host: %q %v (want the ephemeral HOME's path written)", target, data, err)
			}
		})
	}
}
