package selftest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestProcessesWith: the survivor scan finds a live process by a token anywhere in its
// command line (argv[0], as the timeout-kill sleeper carries it, and a later argument),
// and nothing once it is gone.
func TestProcessesWith(t *testing.T) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	token := "bwrapkit-scan-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	// cat reads its stdin (a pipe nobody writes) first, so it waits there with the token
	// still to come.
	for _, args := range [][]string{{token, "-"}, {"cat", "-", token}} {
		stdin, writer, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := &exec.Cmd{Path: cat, Args: args, Stdin: stdin}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stdin.Close()
		// Start returns once the exec began; the kernel sets the new command line a moment
		// later (an empty one reads until then).
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline"); len(cmdline) > 0 {
				break
			}
		}
		found := processesWith(token)
		want := strconv.Itoa(cmd.Process.Pid) + ": " + strings.Join(args, " ")
		cmd.Process.Kill()
		cmd.Wait()
		writer.Close()
		if len(found) != 1 || found[0] != want {
			t.Errorf("argv %q: found %q, want [%q]", args, found, want)
		}
		if left := processesWith(token); len(left) != 0 {
			t.Errorf("argv %q: found %q after it ended", args, left)
		}
	}
}
