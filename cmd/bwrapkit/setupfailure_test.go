package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// TestLiveSetupFailureIsBwrapsNotTheGates: when bwrap dies in its own setup (here a proc
// mount the kernel refuses, inside an outer sandbox whose /proc is partly covered, as in
// a container with runtime masks), the run names bwrap's failure, every time. The gate
// watches the sandbox being built and used to lose sight of the dying child first in
// about a third of the runs ("the sandbox's child exited while it was being built",
// "cannot inspect the sandbox being built", "cannot set as=... : no such process"),
// which reads as a raced path instead of the host's refusal. Through the built binary,
// on each bwrap, as the caller (root or nobody).
func TestLiveSetupFailureIsBwrapsNotTheGates(t *testing.T) {
	outer := livetest.SystemBwrap(t)
	for _, bw := range livetest.Bwraps(t) {
		t.Run(bw.Name, func(t *testing.T) {
			workdir := livetest.TempDir(t)
			cache := livetest.TempDir(t)
			// The outer sandbox: its own user and pid namespaces, the host read-only, and a
			// tmpfs over /proc/fs, which leaves no fully visible proc for a nested one.
			argv := []string{outer, "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/",
				"--proc", "/proc", "--tmpfs", "/proc/fs", "--dev", "/dev", "--tmpfs", "/tmp",
				"--ro-bind", filepath.Dir(builtBinary), filepath.Dir(builtBinary), // built under /tmp
				"--bind", workdir, workdir, "--bind", cache, cache, "--",
				"env", "-i", "HOME=" + cache, "XDG_CACHE_HOME=" + cache, newcomerPATH,
				builtBinary, "run", "--bwrap", bw.Path, "--workdir", workdir, "--", "/bin/true"}
			const tries = 15
			for try := range tries {
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Dir = "/"
				status, _, stderr := runStatus(t, cmd)
				named := strings.Contains(stderr, "Can't mount proc") && strings.Contains(stderr, "failed while building the sandbox")
				if status != 125 || !named {
					t.Fatalf("try %d of %d: exit %d (want 125) and stderr without bwrap's proc failure named as the cause:\n%s", try+1, tries, status, stderr)
				}
				for _, gates := range []string{"while it was being built", "cannot inspect", "cannot watch", "no such process"} {
					if strings.Contains(stderr, gates) {
						t.Fatalf("try %d of %d: the gate's word (%q) instead of bwrap's failure:\n%s", try+1, tries, gates, stderr)
					}
				}
			}
			// Nothing of a refused run stays: no project HOME, no layer.
			if entries, _ := os.ReadDir(filepath.Join(cache, "bwrapkit", "layers")); len(entries) > 1 {
				t.Errorf("refused runs left %d layer directories", len(entries))
			}
		})
	}
}
