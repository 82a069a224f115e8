package selftest

import (
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
	"github.com/bwrapkit/bwrapkit/sandbox/cgroup"
	"github.com/bwrapkit/bwrapkit/sandbox/limits"
	"github.com/bwrapkit/bwrapkit/sandbox/seccomp"
)

// The kernel-surface self-tests' decisions, over observations as the probe reports them
// from a sound sandbox and from one with each protection missing.

func TestProcSysVerdict(t *testing.T) {
	surface := sandbox.ProcSurface{ReadOnly: []string{"/proc/sys", "/proc/sysrq-trigger"}, MaskFiles: []string{"/proc/kcore"}, MaskDirs: []string{"/proc/acpi"}}
	sound := probe.ProcSurfaceObservation{Sysctl: "/proc/sys/vm/stat_interval", SysctlValue: "1", OpenError: "EROFS",
		ReadOnlyMounts: map[string]string{"/proc/sys": "ro,nosuid,nodev", "/proc/sysrq-trigger": "ro,relatime"},
		Masked:         map[string]string{"/proc/kcore": "", "/proc/acpi": ""},
		MaskMounts:     map[string]string{"/proc/kcore": "ro,nosuid", "/proc/acpi": "ro,nosuid"}}
	with := func(change func(o *probe.ProcSurfaceObservation)) probe.ProcSurfaceObservation {
		o := sound
		o.ReadOnlyMounts = map[string]string{"/proc/sys": "ro,nosuid,nodev", "/proc/sysrq-trigger": "ro,relatime"}
		o.Masked = map[string]string{"/proc/kcore": "", "/proc/acpi": ""}
		o.MaskMounts = map[string]string{"/proc/kcore": "ro,nosuid", "/proc/acpi": "ro,nosuid"}
		change(&o)
		return o
	}
	for _, tc := range []struct {
		name     string
		observed probe.ProcSurfaceObservation
		after    string
		status   report.Status
		says     string
	}{
		{"sound", sound, "1", report.StatusOK, "vm/stat_interval: EROFS"},
		{"a nobody's EACCES, the mount still read-only", with(func(o *probe.ProcSurfaceObservation) { o.OpenError = "EACCES" }), "1", report.StatusOK, "EACCES"},
		{"the write let through", with(func(o *probe.ProcSurfaceObservation) { o.OpenError = "" }), "1", report.StatusFail, "could be opened for writing"},
		{"the host's value changed", sound, "2", report.StatusFail, "changed from 1 to 2"},
		{"/proc/sys read-write", with(func(o *probe.ProcSurfaceObservation) { o.ReadOnlyMounts["/proc/sys"] = "rw,nosuid" }), "1", report.StatusFail, "/proc/sys is mounted read-write"},
		{"no mount on /proc/sysrq-trigger", with(func(o *probe.ProcSurfaceObservation) { delete(o.ReadOnlyMounts, "/proc/sysrq-trigger") }), "1", report.StatusFail, "no mount of its own"},
		{"kcore shows", with(func(o *probe.ProcSurfaceObservation) { o.Masked["/proc/kcore"] = "\x7fELF" }), "1", report.StatusFail, "/proc/kcore shows"},
		{"acpi empty but not masked", with(func(o *probe.ProcSurfaceObservation) { delete(o.MaskMounts, "/proc/acpi") }), "1", report.StatusFail, "/proc/acpi is not masked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := procSysVerdict(tc.observed, surface, "1", tc.after)
			if c.Status != tc.status || !strings.Contains(c.Summary, tc.says) {
				t.Errorf("%s %q, want %s saying %q", c.Status, c.Summary, tc.status, tc.says)
			}
		})
	}
}

func TestSetuidVerdict(t *testing.T) {
	refused := probe.SetuidObservation{Attempts: []probe.SyscallAttempt{{Syscall: "chmod 04755", Errno: "EPERM"}, {Syscall: "mkdir 02755", Errno: "EPERM"}}}
	if c := setuidVerdict(refused, nil); c.Status != report.StatusOK {
		t.Errorf("refused: %s %s", c.Status, c.Summary)
	}
	allowed := probe.SetuidObservation{Attempts: []probe.SyscallAttempt{{Syscall: "chmod 04755"}, {Syscall: "mkdir 02755", Errno: "EPERM"}}}
	if c := setuidVerdict(allowed, nil); c.Status != report.StatusFail || !strings.Contains(c.Summary, "chmod 04755 (succeeded)") {
		t.Errorf("allowed: %s %s", c.Status, c.Summary)
	}
	if c := setuidVerdict(refused, []string{"/w/setuid-t/plain (-rwsr-xr-x)"}); c.Status != report.StatusFail || !strings.Contains(c.Summary, "reached the host") {
		t.Errorf("on the host: %s %s", c.Status, c.Summary)
	}
	broken := refused
	broken.Control = "EPERM"
	if c := setuidVerdict(broken, nil); c.Status != report.StatusFail || !strings.Contains(c.Summary, "ordinary chmod") {
		t.Errorf("control refused: %s %s", c.Status, c.Summary)
	}
	if c := setuidVerdict(probe.SetuidObservation{Control: "create: EROFS"}, nil); c.Status != report.StatusFail {
		t.Errorf("nothing tried: %s", c.Status)
	}
}

func TestSeccompVerdict(t *testing.T) {
	expected, untried, lost := seccompExpectations(seccomp.Denied(), probe.SeccompAttempts())
	if len(expected) < 10 || len(untried) == 0 || len(lost) > 0 {
		t.Fatalf("%d rules tried, %d not, %v lost: the probe and the filter's list do not meet", len(expected), len(untried), lost)
	}
	var denied []probe.SyscallAttempt
	for _, rule := range expected {
		denied = append(denied, probe.SyscallAttempt{Syscall: rule.Syscall, Errno: rule.Errno})
	}
	allowed := []probe.SyscallAttempt{{Syscall: "socket AF_UNIX"}}
	sound := probe.SeccompObservation{Mode: "2", Filters: "1", Denied: denied, Allowed: allowed}
	if c := seccompVerdict(sound, expected, untried, nil); c.Status != report.StatusOK {
		t.Errorf("sound: %s %s", c.Status, c.Summary)
	}
	if c := seccompVerdict(probe.SeccompObservation{Mode: "0", Denied: denied, Allowed: allowed}, expected, untried, nil); c.Status != report.StatusFail || !strings.Contains(c.Summary, "without a seccomp filter") {
		t.Errorf("no filter: %s %s", c.Status, c.Summary)
	}
	leaky := append([]probe.SyscallAttempt{}, denied...)
	for i := range leaky {
		if leaky[i].Syscall == "ptrace" {
			leaky[i].Errno = "ESRCH"
		}
	}
	if c := seccompVerdict(probe.SeccompObservation{Mode: "2", Denied: leaky, Allowed: allowed}, expected, untried, nil); c.Status != report.StatusFail || !strings.Contains(c.Summary, "ptrace ESRCH, not EPERM") {
		t.Errorf("ptrace through: %s %s", c.Status, c.Summary)
	}
	if c := seccompVerdict(probe.SeccompObservation{Mode: "2", Denied: denied, Allowed: []probe.SyscallAttempt{{Syscall: "socket AF_INET", Errno: "EAFNOSUPPORT"}}}, expected, untried, nil); c.Status != report.StatusFail || !strings.Contains(c.Summary, "ordinary calls") {
		t.Errorf("ordinary call refused: %s %s", c.Status, c.Summary)
	}
	// A rule taken out of the filter's table leaves the probe's list: the call is lost, and
	// a filter that no longer denies it fails, though every call still expected got its errno.
	withoutPtrace := slices.DeleteFunc(seccomp.Denied(), func(r seccomp.Rule) bool { return r.Syscall == "ptrace" })
	fewer, untried, lost := seccompExpectations(withoutPtrace, probe.SeccompAttempts())
	if !slices.Equal(lost, []string{"ptrace"}) {
		t.Fatalf("lost %v, want [ptrace]", lost)
	}
	var stillDenied []probe.SyscallAttempt
	for _, rule := range fewer {
		stillDenied = append(stillDenied, probe.SyscallAttempt{Syscall: rule.Syscall, Errno: rule.Errno})
	}
	if c := seccompVerdict(probe.SeccompObservation{Mode: "2", Denied: stillDenied, Allowed: allowed}, fewer, untried, lost); c.Status != report.StatusFail || !strings.Contains(c.Summary, "no longer denies calls it must: ptrace") {
		t.Errorf("a rule gone from the table: %s %s", c.Status, c.Summary)
	}
}

func TestKeyringVerdict(t *testing.T) {
	refused := probe.KeyringObservation{Attempts: []probe.SyscallAttempt{{Syscall: "keyctl get session keyring", Errno: "EPERM"}, {Syscall: "add_key to the user keyring", Errno: "EPERM"}}}
	if c := keyringVerdict(refused, ""); c.Status != report.StatusOK {
		t.Errorf("refused: %s %s", c.Status, c.Summary)
	}
	if c := keyringVerdict(refused, `key 42 "bwrapkit-doctor-t"`); c.Status != report.StatusFail || !strings.Contains(c.Summary, "planted a key") {
		t.Errorf("planted: %s %s", c.Status, c.Summary)
	}
	listed := refused
	listed.ProcKeys = "0ab1c2d3 I--Q---     1 perm 3f010000     0     0 user      secret: 6"
	if c := keyringVerdict(listed, ""); c.Status != report.StatusFail || !strings.Contains(c.Summary, "/proc/keys lists") {
		t.Errorf("/proc/keys: %s %s", c.Status, c.Summary)
	}
	reached := probe.KeyringObservation{Attempts: []probe.SyscallAttempt{{Syscall: "keyctl get session keyring"}}}
	if c := keyringVerdict(reached, ""); c.Status != report.StatusFail {
		t.Errorf("reached: %s %s", c.Status, c.Summary)
	}
}

func TestLimitsVerdict(t *testing.T) {
	policy, err := limits.Parse([]string{"nofile=256", "tmpfs=256K"}, limits.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	bounds := limitsExpectation{rlimits: policy.Rlimits(), tmpfs: policy.TmpfsSize(), sized: true}
	inForce := func() probe.LimitsObservation {
		var o probe.LimitsObservation
		for _, r := range bounds.rlimits {
			o.Rlimits = append(o.Rlimits, probe.RlimitObservation{Resource: r.Resource, Cur: r.Cur, Max: r.Max, Raise: "EPERM"})
		}
		o.Filled, o.FillErrno = bounds.tmpfs, "ENOSPC"
		return o
	}
	v1 := sandbox.RunCgroup{Mode: cgroup.V1, CPUMicros: 4200}
	none := sandbox.RunCgroup{Mode: cgroup.None, Why: "only root can make cgroups on cgroup v1", Remedy: "systemd-run --user --scope -p Delegate=yes"}
	asRoot := bounds
	asRoot.root = true
	for _, tc := range []struct {
		name         string
		want         limitsExpectation
		held         sandbox.RunCgroup
		status       report.Status
		says, remedy string
	}{
		{"a cgroup v1 as root", bounds, v1, report.StatusOK, "cgroup v1 as root", ""},
		{"root in a cgroup v2: pids.max bounds root", asRoot, sandbox.RunCgroup{Mode: cgroup.V2, CPUMicros: 4200}, report.StatusOK, "cgroup v2", ""},
		{"a cgroup the sandbox was never in", bounds, sandbox.RunCgroup{Mode: cgroup.V2}, report.StatusFail, "counted no CPU time", ""},
		{"keeper only", bounds, none, report.StatusWarn, "keeper only", "Delegate=yes"},
		{"keeper only, as root", asRoot, none, report.StatusWarn, "a root caller's tasks", "pids.max"},
		{"a cgroup left behind", bounds, sandbox.RunCgroup{Mode: cgroup.V1, Left: "EBUSY", CPUMicros: 4200}, report.StatusFail, "not removed", ""},
	} {
		c := limitsVerdict(inForce(), tc.want, tc.held)
		if c.Status != tc.status || !strings.Contains(c.Summary, tc.says) || !strings.Contains(c.Remedy, tc.remedy) {
			t.Errorf("%s: %s %s (remedy %q)", tc.name, c.Status, c.Summary, c.Remedy)
		}
	}
	hostNofile := inForce()
	for i := range hostNofile.Rlimits {
		if hostNofile.Rlimits[i].Resource == unix.RLIMIT_NOFILE {
			hostNofile.Rlimits[i].Cur, hostNofile.Rlimits[i].Max = 20000, 20000
		}
	}
	if c := limitsVerdict(hostNofile, bounds, v1); c.Status != report.StatusFail || !strings.Contains(c.Summary, "RLIMIT_NOFILE is 20000/20000, the policy sets 256") {
		t.Errorf("unbounded nofile: %s %s", c.Status, c.Summary)
	}
	raisable := inForce()
	raisable.Rlimits[1].Raise = ""
	if c := limitsVerdict(raisable, bounds, v1); c.Status != report.StatusFail || !strings.Contains(c.Summary, "could be raised") {
		t.Errorf("raisable: %s %s", c.Status, c.Summary)
	}
	unbounded := inForce()
	unbounded.Filled, unbounded.FillErrno = bounds.tmpfs+64<<10, ""
	if c := limitsVerdict(unbounded, bounds, v1); c.Status != report.StatusFail || !strings.Contains(c.Summary, "past its bound") {
		t.Errorf("tmpfs unbounded: %s %s", c.Status, c.Summary)
	}
	unsized := bounds
	unsized.sized = false
	if c := limitsVerdict(unbounded, unsized, v1); c.Status != report.StatusWarn || !strings.Contains(c.Summary, "--size") {
		t.Errorf("no --size: %s %s", c.Status, c.Summary)
	}
}
