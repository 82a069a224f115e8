// Package diagnose decides why a sandbox cannot be built, from the host's structured facts
// first and bwrap's stderr second, and says what to do about it (the commands come from
// package remedy).
package diagnose

import (
	"fmt"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/doctor/remedy"
	"github.com/bwrapkit/bwrapkit/platform"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// Facts are what is known about a failure to build the sandbox: structured facts first
// (the host's knobs, the doctor's own attempt at a user namespace, the binary's mode,
// sandbox.Run's reason) and bwrap's stderr, whose wording varies by version and distro
// patch, as a hint only.
type Facts struct {
	Host   platform.Host
	Root   bool   // the doctor runs as uid 0: remedies need no sudo
	Distro string // WSL_DISTRO_NAME, for the WSL1 remedy
	Bwrap  string // the bwrap in use
	Setuid bool   // its setuid bit
	// AppArmorProfile is the file whose profile grants userns to Bwrap; "" if none found.
	AppArmorProfile string
	// ProcMasks are mounts over parts of /proc (container runtimes mask /proc so); the
	// kernel then refuses a fresh proc mount in a user namespace.
	ProcMasks []string
	// UsernsErr is the errno of the doctor's own clone(CLONE_NEWUSER); 0 when it worked
	// or was not tried.
	UsernsErr syscall.Errno
	// Reason, Missing and Stderr come from a failed sandbox.Run; Reason is "" when only
	// the user namespace is being diagnosed.
	Reason  sandbox.Reason
	Missing []string
	Stderr  string
}

// Cause names why a sandbox cannot be built.
type Cause string

const (
	CauseUnsupportedOS     Cause = "unsupported-os"
	CauseWSL1              Cause = "wsl1"
	CauseNoBwrap           Cause = "no-bwrap"
	CauseNotBwrap          Cause = "not-bwrap"
	CauseMissingOptions    Cause = "missing-options"
	CauseStartFailed       Cause = "start-failed"
	CauseSetuidUnsupported Cause = "setuid-unsupported"
	CauseUsernsOff         Cause = "userns-off"   // no user namespaces in this kernel
	CauseUsernsLimit       Cause = "userns-limit" // user.max_user_namespaces = 0 or exhausted
	CauseNested            Cause = "nested"       // inside a sandbox that forbids more
	CauseUnprivilegedClone Cause = "unprivileged-userns-clone"
	CauseAppArmor          Cause = "apparmor-userns"
	CauseContainer         Cause = "container" // the runtime's seccomp/AppArmor
	CauseSeccomp           Cause = "seccomp"   // a seccomp filter outside any container
	CauseProcMasked        Cause = "proc-masked"
	CauseUsernsDenied      Cause = "userns-denied" // EPERM that no knob explains: a chroot, an LSM
	CauseLaunchTimeout     Cause = "launch-timeout"
	CauseUnknown           Cause = "unknown"
)

// Diagnosis is the cause with what to say and do about it.
type Diagnosis struct {
	Cause   Cause
	Summary string
	// Evidence are the facts that decided, for the check's detail.
	Evidence []string
	Remedy   string
	Fix      *remedy.Fix
	// Commands are the remedy's commands where no Fix carries them (a reboot's, a look in
	// the kernel log): see RemedyCommands.
	Commands []string
}

// RemedyCommands are the commands of the remedy, one shell command each, for this host.
func (d Diagnosis) RemedyCommands() []string {
	if d.Commands != nil {
		return d.Commands
	}
	if d.Fix != nil {
		return d.Fix.Commands
	}
	return nil
}

// Diagnose decides the cause. Structured facts decide whenever they can; stderr breaks
// ties and covers hosts whose facts say nothing (an unknown LSM, a seccomp filter).
func Diagnose(f Facts) Diagnosis {
	hint := stderrHint(f.Stderr)
	blockedByKnob := func(knob platform.Knob) bool { return knob.Present && knob.Value == 0 }
	userns := f.UsernsErr != 0 || hint.userns

	switch {
	case f.Host.Kind == platform.KindDarwin || f.Host.Kind == platform.KindWindows || f.Host.Kind == platform.KindOther:
		return unsupportedOS(f)
	case f.Host.Kind == platform.KindWSL1:
		return wsl1(f)
	case f.Reason == sandbox.ReasonNotFound || f.Reason == sandbox.ReasonNotExecutable:
		return noBwrap(f)
	case f.Setuid && hint.setuid:
		// Decisive whatever else failed: such a build refuses even --help when setuid.
		return setuidUnsupported(f, "the setuid bit is set and bwrap refuses setuid use")
	case f.Reason == sandbox.ReasonUnsupported && !NotBwrap(f.Missing):
		return missingOptions(f)
	case f.Reason == sandbox.ReasonUnsupported || f.Reason == sandbox.ReasonNoLaunchProof && hint.none:
		return notBwrap(f)
	case f.Reason == sandbox.ReasonStartFailed:
		return startFailed(f)
	case blockedByKnob(f.Host.UsernsModuleEnable):
		return usernsOff(f, "/sys/module/user_namespace/parameters/enable = N")
	case blockedByKnob(f.Host.MaxUserNamespaces):
		return usernsLimit(f, "user.max_user_namespaces = 0")
	case blockedByKnob(f.Host.UnprivilegedUsernsClone) && !f.Host.Privileged() && !f.Setuid:
		return unprivilegedClone(f, "kernel.unprivileged_userns_clone = 0 and this process lacks CAP_SYS_ADMIN")
	case f.UsernsErr == syscall.EINVAL:
		return usernsOff(f, "clone(CLONE_NEWUSER) fails with EINVAL")
	case (f.UsernsErr == syscall.ENOSPC || f.UsernsErr == syscall.EUSERS) && !f.Host.InitialUserNamespace:
		return nested(f, fmt.Sprintf("clone(CLONE_NEWUSER) fails with %s inside a user namespace", unix.ErrnoName(f.UsernsErr)))
	case f.UsernsErr == syscall.ENOSPC || f.UsernsErr == syscall.EUSERS:
		return usernsLimit(f, fmt.Sprintf("clone(CLONE_NEWUSER) fails with %s: this user's namespace limit is reached", unix.ErrnoName(f.UsernsErr)))
	case f.Host.AppArmorRestrictsUserns() && f.AppArmorProfile == "":
		return AppArmor(f)
	case f.UsernsErr == syscall.EPERM && f.Host.Seccomp == 2 && f.Host.Container != "":
		return container(f)
	case f.UsernsErr == syscall.EPERM && f.Host.Seccomp == 2:
		return seccomp(f)
	case f.UsernsErr == syscall.EPERM:
		return usernsDenied(f, "clone(CLONE_NEWUSER) fails with EPERM, and no sysctl or seccomp filter explains it")
	case len(f.ProcMasks) > 0 && (hint.proc || !userns):
		return procMasked(f)
	}

	// No structured fact explains it: bwrap's own words are all there is.
	switch {
	case hint.setuid:
		return setuidUnsupported(f, "bwrap says so")
	case hint.noKernelSupport:
		return usernsOff(f, "bwrap says the kernel does not support user namespaces")
	case hint.enospc && !f.Host.InitialUserNamespace:
		return nested(f, "bwrap reports ENOSPC inside a user namespace")
	case hint.enospc:
		return usernsLimit(f, "bwrap reports ENOSPC")
	case hint.uidMap:
		return AppArmor(f)
	case hint.proc:
		return procMasked(f)
	case hint.eperm && f.Host.Container != "" && f.Host.Seccomp == 2:
		return container(f)
	case hint.eperm:
		return usernsDenied(f, "bwrap is not permitted to create a user namespace")
	case f.Reason == sandbox.ReasonLaunchTimeout:
		return launchTimeout(f)
	case f.Reason == sandbox.ReasonNoLaunchProof:
		return notBwrap(f)
	}
	return unknown(f)
}

// hints are what bwrap's stderr suggests, across the wordings of 0.4 to 0.13 and Debian's patch.
type hints struct {
	none            bool // bwrap printed nothing of its own
	userns          bool // any failure to create a namespace
	eperm           bool // "No permissions to create(ing) ... namespace", "... failed: Operation not permitted"
	enospc          bool
	noKernelSupport bool
	uidMap          bool // AppArmor's restriction: no capabilities in the new namespace
	proc            bool
	setuid          bool
}

func stderrHint(stderr string) hints {
	text := strings.ToLower(stderr)
	has := func(s string) bool { return strings.Contains(text, s) }
	h := hints{
		none:            !has("bwrap:"),
		eperm:           has("no permissions to creat") || has("creating new namespace failed: operation not permitted"),
		enospc:          has("enospc") || has("nesting depth"),
		noKernelSupport: has("does not support user namespaces"),
		uidMap:          has("setting up uid map: permission denied") || has("rtm_newaddr: operation not permitted"),
		proc:            has("can't mount proc"),
		setuid:          has("setuid use of bubblewrap is not supported"),
	}
	h.userns = h.eperm || h.enospc || h.noKernelSupport || has("creating new namespace failed")
	return h
}

// ProcMasks lists the mounts stacked on parts of /proc in a mountinfo text. The kernel lets
// a user namespace mount a fresh proc only when nothing of the existing one is hidden, and
// container runtimes hide /proc/kcore, /proc/acpi and others this way. binfmt_misc sits on
// a directory the kernel keeps empty, so it hides nothing.
func ProcMasks(mountinfo string) []string {
	var masks []string
	for _, line := range strings.Split(mountinfo, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		mountPoint := fields[4]
		if strings.HasPrefix(mountPoint, "/proc/") && mountPoint != "/proc/sys/fs/binfmt_misc" {
			masks = append(masks, mountPoint)
		}
	}
	return masks
}

// NotBwrap: a binary whose --help lists none of the options the boundary needs is not a
// bwrap at all (an impostor, or a build that refuses even --help), not an old one.
// (The one place this is decided until sandbox offers it: Features.IsBwrap.)
func NotBwrap(missing []string) bool { return len(missing) == len(sandbox.Required()) }
