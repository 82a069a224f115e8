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
// (the host's knobs and confinement, the doctor's own attempt at a user namespace, the
// binary's mode, sandbox.Run's reason) and bwrap's stderr, whose wording varies by version
// and distro patch, as a hint only.
type Facts struct {
	Host   platform.Host
	Root   bool   // the doctor runs as uid 0: remedies need no sudo
	Distro string // WSL_DISTRO_NAME, for the WSL1 remedy
	Bwrap  string // the bwrap in use
	Setuid bool   // its setuid bit
	// AppArmorProfile is the file whose profile grants userns to Bwrap; "" if none found.
	AppArmorProfile string
	// UsernsErr is the errno of the doctor's own clone(CLONE_NEWUSER); 0 when it worked
	// or was not tried.
	UsernsErr syscall.Errno
	// Reason, Missing, Stderr and Err come from a failed sandbox.Run; Reason is "" when
	// only the user namespace is being diagnosed.
	Reason  sandbox.Reason
	Missing []string
	Stderr  string
	Err     error
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
	CauseRefused           Cause = "bwrapkit-refused" // bwrapkit's own refusal, not the host's
	CauseSetuidUnsupported Cause = "setuid-unsupported"
	CauseEmulated          Cause = "emulated"         // gVisor, proot, Termux: nothing to set in place
	CauseUsernsNotBuilt    Cause = "userns-not-built" // a kernel without CONFIG_USER_NS
	CauseUsernsOff         Cause = "userns-off"       // RHEL 7: user_namespace.enable=N
	CauseUsernsLimit       Cause = "userns-limit"     // user.max_user_namespaces = 0 or exhausted
	CauseNested            Cause = "nested"           // inside a sandbox that forbids more
	CauseUnprivilegedClone Cause = "unprivileged-userns-clone"
	CauseAppArmor          Cause = "apparmor-userns"
	CauseContainer         Cause = "container"       // the runtime's seccomp or AppArmor refuses the namespace
	CauseContainerMount    Cause = "container-mount" // the runtime's AppArmor or seccomp refuses bwrap's mounts
	CauseSeccomp           Cause = "seccomp"         // a seccomp filter outside any container
	CauseProcMasked        Cause = "proc-masked"     // no fully visible proc: the kernel refuses a fresh one
	CauseDisableUserns     Cause = "disable-userns"  // --disable-userns cannot write max_user_namespaces here
	CauseMountLimit        Cause = "mount-limit"     // fs.mount-max reached
	CauseUsernsDenied      Cause = "userns-denied"   // EPERM that no knob explains: a chroot, an LSM
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
	// the kernel log, a runtime's): see RemedyCommands.
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

// Diagnose decides the cause. The order is what each fact proves: the platform and the binary
// first, then the knobs and build that forbid every user namespace, the errno of the doctor's
// own clone(CLONE_NEWUSER), this process's confinement (AppArmor label, seccomp), and only
// then the step bwrap names in stderr, judged against the facts (the masks that actually hide
// something, the file it failed on). A failure no fact explains stays CauseUnknown with the
// facts shown: a wrong name costs a user more than none.
func Diagnose(f Facts) Diagnosis {
	fail := ParseFailure(f.Stderr)
	if (f.Reason == sandbox.ReasonUnverified || f.Reason == sandbox.ReasonHardening) && fail.Step != StepNone {
		// bwrap died in its own setup (a refused proc mount, pivot_root...) while the gate
		// was looking at the half-built sandbox or bounding its child, and lost sight of it:
		// bwrap's failure is the cause. The gate's word stands only for a sandbox that was
		// built (a gate that refuses kills bwrap before it can print anything).
		f.Reason = sandbox.ReasonSetupFailed
	}
	host := f.Host
	gvisor := host.Emulation == platform.EmulationGVisor
	blocked := func(knob platform.Knob) bool { return knob.Present && knob.Value == 0 }

	switch {
	case host.Kind == platform.KindDarwin || host.Kind == platform.KindWindows || host.Kind == platform.KindOther:
		return unsupportedOS(f)
	case host.Kind == platform.KindWSL1:
		return wsl1(f)
	case f.Reason == sandbox.ReasonNotFound || f.Reason == sandbox.ReasonNotExecutable:
		return noBwrap(f)
	case procMissing(host) && fail.Step == StepOther && strings.Contains(fail.Line, "/proc/"):
		// bwrap reads /proc before anything else (0.12.0 even for --help): without a proc
		// mounted it is not an impostor, it cannot start at all.
		return noProc(f)
	case f.Setuid && fail.Step == StepSetuid:
		// Decisive whatever else failed: such a build refuses even --help when setuid.
		return setuidUnsupported(f, "the setuid bit is set and bwrap refuses setuid use")
	case f.Reason == sandbox.ReasonUnsupported && !NotBwrap(f.Missing):
		return missingOptions(f)
	case f.Reason == sandbox.ReasonUnsupported || f.Reason == sandbox.ReasonNoLaunchProof && fail.Step == StepNone:
		return notBwrap(f)
	case f.Reason == sandbox.ReasonStartFailed:
		return startFailed(f)
	case f.Reason == sandbox.ReasonInvalidPolicy || f.Reason == sandbox.ReasonUntrusted ||
		f.Reason == sandbox.ReasonUnverified || f.Reason == sandbox.ReasonHardening:
		// bwrapkit itself refused before or after bwrap: the host is not what failed.
		return refused(f)
	}

	// What forbids every user namespace, most absolute first.
	switch {
	case !gvisor && host.UsernsBuild.State == platform.UsernsNotBuilt:
		return usernsNotBuilt(f, host.UsernsBuild.Evidence)
	case blocked(host.UsernsModuleEnable):
		return usernsOff(f, "/sys/module/user_namespace/parameters/enable = N")
	case blocked(host.MaxUserNamespaces):
		return usernsLimit(f, "user.max_user_namespaces = 0")
	case blocked(host.UnprivilegedUsernsClone) && !host.Privileged() && !f.Setuid:
		return unprivilegedClone(f, "kernel.unprivileged_userns_clone = 0 and this process lacks CAP_SYS_ADMIN")
	}

	// The doctor's own clone(CLONE_NEWUSER): the kernel's answer to this very process.
	switch errno := f.UsernsErr; {
	case errno == syscall.EINVAL && !gvisor:
		return usernsNotBuilt(f, "clone(CLONE_NEWUSER) fails with EINVAL")
	case (errno == syscall.ENOSPC || errno == syscall.EUSERS) && !host.InitialUserNamespace:
		return nested(f, fmt.Sprintf("clone(CLONE_NEWUSER) fails with %s inside a user namespace", unix.ErrnoName(errno)))
	case errno == syscall.ENOSPC || errno == syscall.EUSERS:
		return usernsLimit(f, fmt.Sprintf("clone(CLONE_NEWUSER) fails with %s: this user's namespace limit is reached", unix.ErrnoName(errno)))
	}
	if host.Emulation == platform.EmulationProot || (host.Termux || host.Android) && (f.UsernsErr != 0 || fail.Step == StepUserns) {
		return emulated(f)
	}
	firstSteps := fail.Step == StepUIDMap || fail.Step == StepLoopback || fail.Step == StepUserns
	if apparmorRestricts(host) && f.AppArmorProfile == "" && (f.UsernsErr == 0 || f.UsernsErr == syscall.EPERM) &&
		(f.Reason == "" || f.Reason == sandbox.ReasonSetupFailed && firstSteps) {
		// Unconfined, restricted, no profile: the kernel gives bwrap a user namespace without
		// capabilities, and the uid map (or lo's address) is the first thing that fails.
		return AppArmor(f)
	}
	if f.UsernsErr == syscall.EPERM {
		switch {
		case host.Container != "" || confined(host):
			return container(f, usernsErrText(f.UsernsErr))
		case seccompFiltered(host):
			return seccomp(f)
		}
		return usernsDenied(f, "clone(CLONE_NEWUSER) fails with EPERM, and no sysctl, seccomp filter or confinement explains it")
	}

	// The namespace is there: the step bwrap names decides, judged against the facts.
	if fail.MountLimit {
		return mountLimit(f)
	}
	switch fail.Step {
	case StepSetuid:
		return setuidUnsupported(f, "bwrap says so")
	case StepDisableUserns:
		return disableUserns(f, fail)
	case StepSlave:
		return slave(f, fail)
	case StepPivotRoot:
		return pivotRoot(f, fail)
	case StepProc:
		return proc(f, fail)
	case StepUIDMap, StepLoopback:
		if apparmorRestricts(host) {
			// A profile file exists, yet the kernel still restricts: it is not loaded.
			return AppArmor(f)
		}
		// Not AppArmor's restriction (gVisor, hidepid=1 on /proc, an LSM): say so, name nothing.
		return unknown(f, fail)
	case StepUserns, StepInnerUserns:
		return usernsFromText(f, fail)
	}
	switch {
	case f.Reason == sandbox.ReasonLaunchTimeout:
		return launchTimeout(f)
	case f.Reason == sandbox.ReasonNoLaunchProof:
		return notBwrap(f)
	}
	return unknown(f, fail)
}

// procMissing: no proc is mounted where this process runs (a chroot or build root without
// one): the mount table is absent, or read and holds no proc.
func procMissing(host platform.Host) bool {
	view := host.Proc
	return host.Emulation != platform.EmulationGVisor && (!view.Known && view.Err == "" || view.Known && len(view.Mounts) == 0)
}

// usernsFromText decides a namespace failure the doctor's own clone did not reproduce (it
// could not try, or bwrap's flags differ): bwrap's words are then the only witness.
func usernsFromText(f Facts, fail Failure) Diagnosis {
	host := f.Host
	switch {
	case fail.KernelSaysNoUserns && host.Emulation != platform.EmulationGVisor:
		return usernsNotBuilt(f, "bwrap says the kernel does not support user namespaces")
	case fail.ENOSPC && !host.InitialUserNamespace:
		return nested(f, "bwrap reports ENOSPC creating a user namespace inside one")
	case fail.ENOSPC:
		return usernsLimit(f, "bwrap reports ENOSPC creating a user namespace")
	case fail.NoPermission || fail.Errno == "Operation not permitted":
		if apparmorRestricts(host) && f.AppArmorProfile == "" {
			return AppArmor(f)
		}
		if host.Container != "" && (seccompFiltered(host) || confined(host)) {
			return container(f, "bwrap is not permitted to create a namespace")
		}
		if seccompFiltered(host) {
			return seccomp(f)
		}
		return usernsDenied(f, "bwrap is not permitted to create a user namespace")
	}
	return unknown(f, fail)
}

// apparmorRestricts: Ubuntu's restriction applies only to unconfined processes, and only
// where AppArmor itself is on (gVisor reports neither).
func apparmorRestricts(host platform.Host) bool {
	return host.AppArmorRestrictsUserns() && host.AppArmorLabel.Unconfined() && host.Emulation != platform.EmulationGVisor
}

// AppArmorRestrictsThisProcess reports whether Ubuntu's userns restriction applies to this
// process: the knob is on and this process's AppArmor label was read as unconfined.
func AppArmorRestrictsThisProcess(host platform.Host) bool { return apparmorRestricts(host) }

// confined: a label was read and it is a profile (docker-default, lxc-container-default...).
func confined(host platform.Host) bool {
	return host.AppArmorLabel.Known && !host.AppArmorLabel.Unconfined()
}

func seccompFiltered(host platform.Host) bool {
	return host.SeccompState.Known && host.SeccompState.Mode == 2
}

// NotBwrap: a binary whose --help lists none of the options the boundary needs is not a
// bwrap at all (an impostor, or a build that refuses even --help), not an old one.
// (The one place this is decided until sandbox offers it: Features.IsBwrap.)
func NotBwrap(missing []string) bool { return len(missing) == len(sandbox.Required()) }
