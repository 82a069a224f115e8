package sandbox

import (
	"reflect"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		name   string
		launch launch
		want   Result
		reason Reason
	}{
		{"exited", launch{childPID: 9, exitReported: true, exitCode: 3, bwrapStatus: 3}, Result{Started: true, ExitCode: 3}, ""},
		{"signal", launch{childPID: 9, exitReported: true, exitCode: 137, bwrapStatus: 137}, Result{Started: true, ExitCode: 137, Signal: 9}, ""},
		{"not found inside", launch{childPID: 9, bwrapStatus: 1, stderr: "bwrap: execvp nope: No such file or directory\n"}, Result{ExitCode: 127, Failure: CommandNotFound}, ""},
		{"not executable inside", launch{childPID: 9, bwrapStatus: 1, stderr: "bwrap: execvp /etc/passwd: Permission denied\n"}, Result{ExitCode: 126, Failure: CommandNotExecutable}, ""},
		// stderr handed to the command: no execvp line to read; the gate released the
		// filter, so only the exec was left, and whether the command is inside decides.
		{"direct: not found inside", launch{childPID: 9, bwrapStatus: 1, direct: true}, Result{ExitCode: 127, Failure: CommandNotFound}, ""},
		{"direct: found but not executable", launch{childPID: 9, bwrapStatus: 1, direct: true, commandFound: true}, Result{ExitCode: 126, Failure: CommandNotExecutable}, ""},
		{"direct: setup failed before child-pid", launch{bwrapStatus: 1, direct: true}, Result{}, ReasonSetupFailed},
		{"direct: setup failed in the child", launch{childPID: 9, bwrapStatus: 1, direct: true, withheld: true}, Result{}, ReasonSetupFailed},
		{"direct: killed before child-pid", launch{bwrapStatus: -1, direct: true}, Result{}, ReasonNoLaunchProof},
		{"direct: exit reported wins", launch{childPID: 9, exitReported: true, exitCode: 3, direct: true}, Result{Started: true, ExitCode: 3}, ""},
		{"setup failed in the child", launch{childPID: 9, bwrapStatus: 1, stderr: "bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n"}, Result{}, ReasonSetupFailed},
		{"uid map refused (AppArmor)", launch{childPID: 9, bwrapStatus: 1, stderr: "bwrap: setting up uid map: Permission denied\n"}, Result{}, ReasonSetupFailed},
		{"refused before the child", launch{bwrapStatus: 1, stderr: "bwrap: No permissions to create a new namespace, likely because the kernel does not allow non-privileged user namespaces.\n"}, Result{}, ReasonSetupFailed},
		{"impostor exits 0", launch{bwrapStatus: 0}, Result{}, ReasonNoLaunchProof},
		{"impostor exits 1 silently", launch{bwrapStatus: 1}, Result{}, ReasonNoLaunchProof},
		{"bwrap killed after child-pid", launch{childPID: 9, bwrapStatus: -1}, Result{}, ReasonNoLaunchProof},
		{"timed out", launch{childPID: 9, timedOut: true, bwrapStatus: -1}, Result{Started: true, ExitCode: 124, TimedOut: true}, ""},
		{"command output mimics bwrap but exited", launch{childPID: 9, exitReported: true, exitCode: 0, stderr: "bwrap: execvp x: No such file or directory\n"}, Result{Started: true}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, reason := classify(c.launch)
			if !reflect.DeepEqual(got, c.want) || reason != c.reason {
				t.Errorf("classify(%+v) = %+v, %q; want %+v, %q", c.launch, got, reason, c.want, c.reason)
			}
		})
	}
}

func TestUnavailableMessagesNameCauseAndNextStep(t *testing.T) {
	for _, reason := range []Reason{ReasonNotFound, ReasonNotExecutable, ReasonUnsupported, ReasonStartFailed, ReasonSetupFailed, ReasonNoLaunchProof, ReasonLaunchTimeout} {
		err := &UnavailableError{Reason: reason, Bwrap: "/usr/bin/bwrap", Stderr: "bwrap: setting up uid map: Permission denied\n", Missing: []string{"json-status-fd"}}
		message := err.Message()
		if want := "next: "; !strings.Contains(message, want) || !strings.Contains(message, "did not run") {
			t.Errorf("%s: %q", reason, message)
		}
	}
}

// TestSetupFailureMessageOnce: when bwrap's stderr already reached the user, the 125
// message points at it instead of repeating it.
func TestSetupFailureMessageOnce(t *testing.T) {
	line := "bwrap: setting up uid map: Permission denied"
	err := &UnavailableError{Reason: ReasonSetupFailed, Bwrap: "/usr/bin/bwrap", Stderr: line + "\n"}
	if !strings.Contains(err.Message(), line) {
		t.Errorf("unshown stderr: the message must carry bwrap's line: %s", err.Message())
	}
	err.StderrShown = true
	if strings.Contains(err.Message(), line) || !strings.Contains(err.Message(), "its message is above") {
		t.Errorf("shown stderr repeated: %s", err.Message())
	}
}
