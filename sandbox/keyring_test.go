package sandbox

import (
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestBwrapStartsInAFreshSessionKeyring: bwrap does not namespace keyrings, so the
// fresh, anonymous session keyring startInFreshKeyring joins before bwrap is started is
// all that keeps the caller's session keys from the sandbox where keyctl is not
// filtered (the filter is the other wall, and hides this one from any test run inside
// the sandbox; hence this test, of the wall alone). The helper reports the session
// keyring it was started in: started plainly, the caller's; started by
// startInFreshKeyring, another one.
func TestBwrapStartsInAFreshSessionKeyring(t *testing.T) {
	// Not created here if missing: a session keyring made now would be this thread's
	// alone, and bwrap's thread would not share it. Without one of its own, every thread
	// reports the user's session keyring.
	callers, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, false)
	if err != nil {
		t.Fatalf("precondition: keyrings work in this process (keyctl), or there is nothing to keep out: %v", err)
	}
	helper := func() *exec.Cmd {
		cmd := exec.Command(testExecutable(t), "session-keyring")
		cmd.Env = []string{helperEnv + "=1"}
		return cmd
	}
	plain, err := helper().Output()
	if err != nil || strings.TrimSpace(string(plain)) != strconv.Itoa(callers) {
		t.Fatalf("precondition: a child started plainly reports the caller's session keyring %d, got %q (%v)", callers, plain, err)
	}
	cmd := helper()
	var out bytes.Buffer
	cmd.Stdout = &out
	exited, err := startInFreshKeyring(cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Fatalf("helper: %v %s", err, out.String())
	}
	got := strings.TrimSpace(out.String())
	if got == strconv.Itoa(callers) {
		t.Fatalf("bwrap would start in the caller's session keyring %s: its keys are one keyctl away inside", got)
	}
	if got == "" || strings.Trim(got, "0123456789") != "" {
		t.Fatalf("the helper reported no keyring: %q", got)
	}
}
