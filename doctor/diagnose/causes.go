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

// The remedies, one per cause: exact commands for this host and this bwrap path.

// InstallRemedy is the remedy for a missing or unusable bwrap.
const InstallRemedy = "run `bwrapkit install` for a verified static bwrap (or install your distribution's bubblewrap package)"

// Sudo is the prefix the remedies' commands need for this caller.
func (f Facts) Sudo() string { return remedy.Sudo(f.Root) }

func (f Facts) evidence(candidates ...string) []string {
	var facts []string
	for _, fact := range candidates {
		if fact != "" {
			facts = append(facts, fact)
		}
	}
	if line := lastLine(f.Stderr); line != "" {
		facts = append(facts, "bwrap said: "+line)
	}
	return facts
}

func unsupportedOS(f Facts) Diagnosis {
	reason, _ := f.Host.Unsupported()
	return Diagnosis{Cause: CauseUnsupportedOS, Summary: reason,
		Evidence: []string{"GOOS=" + f.Host.OS},
		Remedy:   "bubblewrap needs a Linux kernel: run on Linux (on Windows, inside a WSL2 distribution)"}
}

func wsl1(f Facts) Diagnosis {
	distro := f.Distro
	if distro == "" {
		distro = "<distro>"
	}
	return Diagnosis{Cause: CauseWSL1, Summary: "WSL1 has no user namespaces, so bwrap can never run here: use WSL2",
		Evidence: []string{"kernel release " + f.Host.Kernel + " (WSL1 reports \"Microsoft\")"},
		Remedy:   fmt.Sprintf("use WSL2: in Windows, run `wsl --set-version %s 2` (see `wsl -l -v`), then run bwrapkit doctor again", distro)}
}

func noBwrap(f Facts) Diagnosis {
	summary := "no usable bwrap"
	if f.Bwrap != "" {
		summary = f.Bwrap + " cannot be executed"
	}
	return Diagnosis{Cause: CauseNoBwrap, Summary: summary, Evidence: f.evidence("sandbox: " + string(f.Reason)),
		Remedy: InstallRemedy, Fix: remedy.InstallFix(f.Bwrap)}
}

func notBwrap(f Facts) Diagnosis {
	summary := f.Bwrap + " is not a working bwrap: it never reported a sandboxed child"
	if f.Reason == sandbox.ReasonUnsupported {
		summary = f.Bwrap + " does not behave like bwrap: its --help lists none of bwrap's options"
	}
	return Diagnosis{Cause: CauseNotBwrap,
		Summary:  summary,
		Evidence: f.evidence("sandbox: " + string(f.Reason)),
		Remedy:   InstallRemedy + ", or point --bwrap at a real one",
		Fix:      remedy.InstallFix(f.Bwrap)}
}

func missingOptions(f Facts) Diagnosis {
	return Diagnosis{Cause: CauseMissingOptions,
		Summary:  fmt.Sprintf("%s is too old: it lacks --%s", f.Bwrap, strings.Join(f.Missing, ", --")),
		Evidence: []string{"--help does not list --" + strings.Join(f.Missing, ", --")},
		Remedy:   InstallRemedy,
		Fix:      remedy.InstallFix(f.Bwrap)}
}

func startFailed(f Facts) Diagnosis {
	return Diagnosis{Cause: CauseStartFailed, Summary: f.Bwrap + " could not be started (wrong architecture, or a noexec mount?)",
		Evidence: f.evidence("sandbox: " + string(f.Reason)),
		Remedy:   InstallRemedy,
		Fix:      remedy.InstallFix(f.Bwrap)}
}

func setuidUnsupported(f Facts, why string) Diagnosis {
	fix := remedy.RemoveSetuidFix(f.Sudo(), f.Bwrap)
	return Diagnosis{Cause: CauseSetuidUnsupported,
		Summary:  f.Bwrap + " is setuid, but this build does not support setuid use",
		Evidence: f.evidence(why),
		Remedy:   "remove the setuid bit (unprivileged user namespaces do the job without it):\n" + fix.Commands[0],
		Fix:      fix}
}

func usernsOff(f Facts, why string) Diagnosis {
	grubby := f.Sudo() + "grubby --update-kernel=ALL --args=user_namespace.enable=1"
	return Diagnosis{Cause: CauseUsernsOff, Commands: []string{grubby},
		Summary:  "this kernel has user namespaces switched off at boot, and bwrap needs them",
		Evidence: f.evidence(why),
		Remedy: "enable them on the kernel command line and reboot (RHEL/CentOS 7):\n" +
			grubby + "\n" +
			"then make sure user.max_user_namespaces is above 0 (see below) and reboot"}
}

func usernsLimit(f Facts, why string) Diagnosis {
	const setting, value = "user.max_user_namespaces", "15000"
	fix := sysctlFix(f, setting, value)
	return Diagnosis{Cause: CauseUsernsLimit,
		Summary:  "user namespaces are limited to none (user.max_user_namespaces), so bwrap cannot create one",
		Evidence: f.evidence(why, fmt.Sprintf("user.max_user_namespaces = %s", KnobText(f.Host.MaxUserNamespaces))),
		Remedy:   "raise the limit now and persist it:\n" + strings.Join(fix.Commands, "\n"),
		Fix:      fix}
}

func nested(f Facts, why string) Diagnosis {
	return Diagnosis{Cause: CauseNested,
		Summary: "user namespaces cannot be created here: this process already runs inside a user namespace " +
			"that forbids more (a sandbox started with --disable-userns, or the nesting limit)",
		Evidence: f.evidence(why),
		Remedy: "run bwrapkit outside the enclosing sandbox: a sandbox that disables nested user namespaces " +
			"(bwrapkit's own does) cannot host another one, by design; if this is a container, give it its own " +
			"user namespace budget (user.max_user_namespaces on the host)"}
}

func unprivilegedClone(f Facts, why string) Diagnosis {
	fix := sysctlFix(f, "kernel.unprivileged_userns_clone", "1")
	return Diagnosis{Cause: CauseUnprivilegedClone,
		Summary:  "the kernel does not allow unprivileged user namespaces, which bwrap needs",
		Evidence: f.evidence(why, "kernel.unprivileged_userns_clone = "+KnobText(f.Host.UnprivilegedUsernsClone)),
		Remedy:   "allow them now and persist it:\n" + strings.Join(fix.Commands, "\n"),
		Fix:      fix}
}

func usernsDenied(f Facts, why string) Diagnosis {
	return Diagnosis{Cause: CauseUsernsDenied, Commands: []string{f.Sudo() + "dmesg | grep -i -e denied -e userns"},
		Summary: "the kernel refuses this process a user namespace (EPERM) though no sysctl forbids it: " +
			"a chroot (the kernel refuses user namespaces inside one) or a security module",
		Evidence: f.evidence(why, usernsErrText(f.UsernsErr)),
		Remedy: "run bwrapkit outside any chroot (schroot, a build root, `chroot`); " +
			"if there is none, look for the denial in the kernel log (" + f.Sudo() + "dmesg | grep -i -e denied -e userns)"}
}

// AppArmor is the diagnosis of AppArmor's userns restriction without a profile for f.Bwrap.
func AppArmor(f Facts) Diagnosis {
	sudo := f.Sudo()
	lastResort := "last resort, lifting the restriction for every program on this host:\n" +
		sudo + "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
	diagnosis := Diagnosis{Cause: CauseAppArmor,
		Summary:  "AppArmor restricts unprivileged user namespaces and no profile lets " + f.Bwrap + " create one",
		Evidence: f.evidence("kernel.apparmor_restrict_unprivileged_userns = "+KnobText(f.Host.AppArmorRestrictUserns), "no profile in /etc/apparmor.d grants userns to "+f.Bwrap),
	}
	// The same profile `doctor --fix` writes, so a printed remedy and an applied one agree.
	profile, err := remedy.NewAppArmorProfile(f.Bwrap)
	if err != nil {
		// The fix stays, without a profile: --fix then says why it cannot write one.
		diagnosis.Remedy = "move bwrap to a plain path (" + err.Error() + "), then give it an AppArmor profile that grants userns;\n" + lastResort
		diagnosis.Fix = &remedy.Fix{Kind: remedy.AppArmor, Bwrap: f.Bwrap}
		return diagnosis
	}
	commands := profile.Commands(sudo)
	diagnosis.Remedy = "give this bwrap a profile that grants userns:\n" + strings.Join(commands, "\n") + "\n" + lastResort
	diagnosis.Fix = profile.Fix(sudo)
	return diagnosis
}

func container(f Facts) Diagnosis {
	runtime := f.Host.Container
	remedy := "run the container with --security-opt seccomp=unconfined --security-opt apparmor=unconfined " +
		"(docker run / podman run), or let the container be the sandbox"
	if runtime == platform.ContainerKubernetes {
		remedy = "set the pod's securityContext to seccompProfile: {type: Unconfined} and appArmorProfile: {type: Unconfined}, or let the container be the sandbox"
	}
	return Diagnosis{Cause: CauseContainer,
		Summary:  fmt.Sprintf("the %s container's seccomp or AppArmor policy forbids creating namespaces", runtime),
		Evidence: f.evidence(fmt.Sprintf("container: %s, seccomp mode %d", runtime, f.Host.Seccomp), usernsErrText(f.UsernsErr)),
		Remedy:   remedy}
}

func seccomp(f Facts) Diagnosis {
	return Diagnosis{Cause: CauseSeccomp,
		Summary:  "a seccomp filter on this process forbids creating user namespaces",
		Evidence: f.evidence("Seccomp: 2 in /proc/self/status", usernsErrText(f.UsernsErr)),
		Remedy: "run bwrapkit outside the program or service that installs the filter (a systemd unit's " +
			"RestrictNamespaces= or SystemCallFilter=, another sandbox, a container runtime)"}
}

func procMasked(f Facts) Diagnosis {
	return Diagnosis{Cause: CauseProcMasked,
		Summary:  "the container masks parts of /proc, so the kernel refuses the sandbox a fresh /proc",
		Evidence: f.evidence("mounts over /proc: " + strings.Join(f.ProcMasks, ", ")),
		Remedy:   "run the container with podman `--security-opt unmask=ALL` (docker: `--security-opt systempaths=unconfined`)"}
}

func launchTimeout(f Facts) Diagnosis {
	return Diagnosis{Cause: CauseLaunchTimeout,
		Summary:  f.Bwrap + " hung while building the sandbox and was killed",
		Evidence: f.evidence("no child-pid within the launch bound"),
		Remedy:   "check for a stuck mount (NFS, FUSE) under the paths bound into the sandbox, and for heavy load; then run again"}
}

func unknown(f Facts) Diagnosis {
	line := lastLine(f.Stderr)
	if line == "" {
		line = "(bwrap printed nothing)"
	}
	return Diagnosis{Cause: CauseUnknown, Summary: f.Bwrap + " could not build the sandbox: " + line,
		Evidence: f.evidence("sandbox: " + string(f.Reason)),
		Remedy:   "no known cause matches; bwrap's message above is the best lead (`bwrapkit doctor -v` shows the host facts)"}
}

// sysctlFix sets a sysctl now and persists it in the drop-in --fix writes and owns.
func sysctlFix(f Facts, setting, value string) *remedy.Fix {
	return remedy.SysctlFix(f.Sudo(), f.Bwrap, remedy.SysctlSetting{Key: setting, Value: value})
}

// KnobText is a kernel knob as a report shows it.
func KnobText(knob platform.Knob) string {
	switch {
	case knob.Present:
		return knob.Raw
	case knob.Err != "":
		return "unreadable (" + knob.Err + ")"
	}
	return "absent"
}

func usernsErrText(errno syscall.Errno) string {
	if errno == 0 {
		return ""
	}
	return "clone(CLONE_NEWUSER) by the doctor itself: " + unix.ErrnoName(errno) + " (" + errno.Error() + ")"
}

// lastLine is the last non-empty line of text, trimmed.
func lastLine(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
