package diagnose

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/platform"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// Live: real bwraps refused by a real kernel, diagnosed from the real mount table. An outer
// bwrap plays the container: a fresh proc with /proc/sys bound read-only over it, as Docker,
// nspawn and systemd's ProtectKernelTunables= leave it. Inside, the kernel refuses a fresh
// proc (the cover makes no proc fully visible) and --disable-userns cannot write
// /proc/sys/user/max_user_namespaces (EROFS): bwrapkit's own flag, refused for real.

const helperEnv = "BWRAPKIT_DIAGNOSE_HELPER"

// TestMain lets the test binary serve as the program inside the sandboxes, so nothing inside
// assumes a shell or coreutils.
func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "mountinfo":
		data, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Stdout.Write(data)
		os.Exit(0)
	case "noop":
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// outerArgv plays the container: the host's own /proc bound read-write (an outer --proc as
// root would cover /proc/sys, /proc/irq and /proc/bus itself, as bwrap covers what it can
// write), with /proc/sys bound read-only over it when coverProcSys. Without the cover it is
// the control, where both refusals must go away.
func outerArgv(outer string, coverProcSys bool) []string {
	argv := []string{outer, "--unshare-user", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--bind", "/proc", "/proc"}
	if coverProcSys {
		argv = append(argv, "--ro-bind", "/proc/sys", "/proc/sys")
	}
	return argv
}

func runHelper(t *testing.T, argv []string, helper string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), helperEnv+"="+helper)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

func TestLiveRefusalsInACoveredProc(t *testing.T) {
	bwraps := livetest.Bwraps(t)
	outer := bwraps[0].Path
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Can this host run the outer sandbox at all? If not, nothing below means anything.
	if _, stderr, err := runHelper(t, append(outerArgv(outer, false), self), "noop"); err != nil {
		livetest.Skip(t, fmt.Sprintf("the outer sandbox does not run here: %v: %s", err, stderr))
	}
	mountinfo, stderr, err := runHelper(t, append(outerArgv(outer, true), self), "mountinfo")
	if err != nil {
		t.Fatalf("mountinfo inside the outer sandbox: %v: %s", err, stderr)
	}
	root := t.TempDir()
	mustWrite(t, root, "proc/self/mountinfo", mountinfo)
	mustWrite(t, root, "proc/sys/kernel/osrelease", "6.1.0-test\n")
	host := platform.Detect(os.DirFS(root), nil, "linux", "amd64")
	if _, visible := host.Proc.VisibleProc(); visible || !host.Proc.Known {
		t.Fatalf("the covered proc reads as visible or unknown: %+v", host.Proc)
	}

	for _, inner := range bwraps {
		t.Run(inner.Name, func(t *testing.T) {
			procArgv := []string{inner.Path, "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", self}
			disableArgv := []string{inner.Path, "--unshare-user", "--disable-userns", "--ro-bind", "/", "/", "--dev", "/dev", self}
			for _, tc := range []struct {
				name  string
				inner []string
				cause Cause
				step  Step
			}{
				{"proc", procArgv, CauseProcMasked, StepProc},
				{"disable-userns", disableArgv, CauseDisableUserns, StepDisableUserns},
			} {
				// The control first: without the cover the same inner sandbox is built.
				if _, stderr, err := runHelper(t, append(outerArgv(outer, false), tc.inner...), "noop"); err != nil {
					livetest.Skip(t, fmt.Sprintf("%s fails here even without the cover (this host's /proc is covered already?): %v: %s", tc.name, err, stderr))
				}
				_, stderr, err := runHelper(t, append(outerArgv(outer, true), tc.inner...), "noop")
				if err == nil {
					t.Fatalf("%s: the inner bwrap succeeded under a covered /proc", tc.name)
				}
				t.Logf("%s: %s", tc.name, strings.TrimSpace(stderr))
				if fail := ParseFailure(stderr); fail.Step != tc.step {
					t.Errorf("%s: step %q from %q, want %q", tc.name, fail.Step, stderr, tc.step)
				}
				diagnosis := Diagnose(Facts{Host: host, Bwrap: inner.Path, Reason: sandbox.ReasonSetupFailed, Stderr: stderr})
				if diagnosis.Cause != tc.cause {
					t.Errorf("%s: cause %s (%s), want %s", tc.name, diagnosis.Cause, diagnosis.Summary, tc.cause)
				}
				if tc.cause == CauseDisableUserns && !strings.Contains(strings.Join(diagnosis.Evidence, "\n"), "/proc/sys mounted read-only") {
					t.Errorf("the read-only /proc/sys is not among the evidence: %q", diagnosis.Evidence)
				}
			}
		})
	}
	if testing.Verbose() {
		t.Logf("mount table inside the outer sandbox:\n%s", filterProc(mountinfo))
	}
}

func filterProc(mountinfo string) string {
	var lines []string
	for _, line := range strings.Split(mountinfo, "\n") {
		if strings.Contains(line, " - proc ") {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "\n")
}
