package diagnose

import (
	"errors"
	"fmt"
	"slices"
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
		if fact != "" && !slices.Contains(facts, fact) {
			facts = append(facts, fact)
		}
	}
	if line := lastLine(f.Stderr); line != "" {
		facts = append(facts, "bwrap said: "+line)
	}
	return facts
}

// hostFacts are the structured facts a diagnosis rests on, as lines for its evidence; what
// could not be read says so and why.
func (f Facts) hostFacts() []string {
	host := f.Host
	var lines []string
	if where := runtimeText(host); where != "" {
		lines = append(lines, where)
	}
	if host.AppArmorEnabled || host.AppArmorLabel.Known || host.AppArmorLabel.Err != "" {
		lines = append(lines, "AppArmor label of this process: "+LabelText(host))
	}
	lines = append(lines, "seccomp: "+SeccompText(host.SeccompState))
	if host.Emulation != platform.EmulationGVisor {
		lines = append(lines, "proc: "+ProcText(host.Proc))
	}
	if text := usernsErrText(f.UsernsErr); text != "" {
		lines = append(lines, text)
	}
	return lines
}

// runtimeText names what runs this process, with the files that proved it.
func runtimeText(host platform.Host) string {
	var parts []string
	if host.Runtime != "" {
		name := host.Runtime
		if host.RuntimeInstance != "" {
			name += " " + host.RuntimeInstance
		}
		parts = append(parts, "container: "+name)
	} else if host.Container != "" {
		parts = append(parts, "container: "+host.Container)
	}
	if host.VirtualMachine != "" {
		parts = append(parts, "virtual machine: "+host.VirtualMachine+" (its own kernel)")
	}
	if host.Emulation != "" {
		parts = append(parts, "emulation: "+host.Emulation)
	}
	switch {
	case host.Termux:
		parts = append(parts, "Android (Termux)")
	case host.Android:
		parts = append(parts, "Android")
	}
	if len(parts) == 0 {
		return ""
	}
	if len(host.RuntimeEvidence) > 0 {
		return strings.Join(parts, ", ") + " (" + strings.Join(host.RuntimeEvidence, "; ") + ")"
	}
	return strings.Join(parts, ", ")
}

// LabelText is this process's AppArmor label as a report shows it.
func LabelText(host platform.Host) string {
	if !host.AppArmorEnabled && !host.AppArmorLabel.Known && host.AppArmorLabel.Err == "" {
		return "none (AppArmor is not enabled)"
	}
	return host.AppArmorLabel.String()
}

// SeccompText is a seccomp state as a report shows it.
func SeccompText(state platform.SeccompState) string {
	if !state.Known {
		return "unknown (" + orText(state.Err, "not read") + ")"
	}
	text := [...]string{"none", "strict", "filter"}[min(max(state.Mode, 0), 2)]
	if state.Mode == 2 && state.Filters > 0 {
		text += fmt.Sprintf(", %d filters", state.Filters)
	}
	return text
}

// ProcText says whether a proc mount is fully visible, what hides parts of /proc, or why
// that is unknown.
func ProcText(view platform.ProcView) string {
	if !view.Known {
		if view.Err != "" {
			return "unknown (/proc/self/mountinfo: " + view.Err + ")"
		}
		return "unknown (/proc/self/mountinfo is missing)"
	}
	masks := view.Masks()
	visible, ok := view.VisibleProc()
	switch {
	case ok && len(masks) > 0:
		return fmt.Sprintf("%s is fully visible, so the masks on /proc (%s) do not stop a fresh proc", visible, strings.Join(masks, ", "))
	case ok:
		return visible + " is fully visible"
	case len(masks) > 0:
		return "no proc mount is fully visible; hidden under /proc: " + strings.Join(masks, ", ")
	case len(view.Mounts) == 0:
		return "no proc mount in the mount table"
	}
	return "no proc mount is fully visible (read-only, subset=pid, a subdirectory, or other atime flags)"
}

func orText(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// onHost is how a container's remedy must begin: a sysctl or an AppArmor profile is the
// kernel's, and only the host may change it.
func (f Facts) onHost() string {
	if f.Host.Container == "" {
		return ""
	}
	return "on the host (not inside this " + containerName(f.Host) + "): "
}

// containerName is "docker container", "systemd-nspawn container", or "container" for a
// runtime no file names.
func containerName(host platform.Host) string {
	name := host.Runtime
	if name == "" {
		name = host.Container
	}
	if name == "" || name == platform.RuntimeOther {
		return "container"
	}
	return name + " container"
}

// hostOnly drops the automatable fix in a container: --fix would change the container's view
// or fail, never the host's. The commands stay, for the host.
func (f Facts) hostOnly(d Diagnosis) Diagnosis {
	if f.Host.Container == "" || d.Fix == nil {
		return d
	}
	d.Commands = append([]string{}, d.Fix.Commands...)
	d.Fix = nil
	return d
}

// noProc: bwrap needs a mounted proc itself (its own /proc/self, the overflow uid) before it
// builds anything, and the kernel lets a sandbox mount a fresh proc only where one is
// already fully visible.
func noProc(f Facts) Diagnosis {
	mount := f.Sudo() + "mount -t proc proc /proc"
	return Diagnosis{Cause: CauseProcMasked, Commands: []string{mount},
		Summary:  "no proc is mounted here (a chroot or build root without /proc), and bwrap cannot start without one",
		Evidence: f.evidence(append([]string{"proc: " + ProcText(f.Host.Proc)}, f.hostFacts()...)...),
		Remedy: "mount proc where bwrapkit runs, then run the doctor again:\n" + mount +
			"\nor run bwrapkit outside the chroot (the kernel also refuses user namespaces inside a chroot, so bwrap needs the real root anyway)"}
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

// startFailed: exec of bwrap itself failed; the errno says why, and only ENOEXEC and EACCES
// are the binary's or its mount's fault (a process out of descriptors is not).
func startFailed(f Facts) Diagnosis {
	d := Diagnosis{Cause: CauseStartFailed, Evidence: f.evidence("sandbox: " + string(f.Reason))}
	switch {
	case errors.Is(f.Err, syscall.EMFILE) || errors.Is(f.Err, syscall.ENFILE):
		d.Summary = f.Bwrap + " could not be started: too many open files (" + errText(f.Err) + ")"
		d.Remedy = "this process (or the whole system) ran out of file descriptors; raise the limit (LimitNOFILE= in a unit) or close what leaks them, then run again; see the limit and the system's count with:\nulimit -n\ncat /proc/sys/fs/file-nr"
		d.Commands = []string{"ulimit -n", "cat /proc/sys/fs/file-nr"}
		return d
	case errors.Is(f.Err, syscall.ENOMEM) || errors.Is(f.Err, syscall.EAGAIN):
		d.Summary = f.Bwrap + " could not be started: the system is out of memory or processes (" + errText(f.Err) + ")"
		d.Remedy = "free memory or raise the process limit (ulimit -u, pids.max of this cgroup), then run again"
		return d
	case errors.Is(f.Err, syscall.EACCES):
		d.Summary = f.Bwrap + " could not be started: permission denied (a noexec mount, or no execute permission on a directory above it)"
	default:
		d.Summary = f.Bwrap + " could not be started (wrong architecture, or a noexec mount?)"
		if f.Err != nil {
			d.Summary += ": " + errText(f.Err)
		}
	}
	d.Remedy, d.Fix = InstallRemedy, remedy.InstallFix(f.Bwrap)
	return d
}

func errText(err error) string {
	if err == nil {
		return "no error given"
	}
	return err.Error()
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
	return f.hostOnly(Diagnosis{Cause: CauseUsernsOff, Commands: []string{grubby},
		Summary:  "this kernel has user namespaces switched off at boot (user_namespace.enable=N), and bwrap needs them",
		Evidence: f.evidence(why),
		Remedy: f.onHost() + "enable them on the kernel command line and reboot (RHEL/CentOS 7):\n" +
			grubby + "\n" +
			"then make sure user.max_user_namespaces is above 0 (see below) and reboot"})
}

// usernsNotBuilt: no setting can add user namespaces to a kernel built without them.
func usernsNotBuilt(f Facts, why string) Diagnosis {
	if f.Host.Android || f.Host.Termux {
		return emulated(f)
	}
	where := "boot"
	if f.Host.Container != "" {
		where = "on the host, boot"
	}
	return Diagnosis{Cause: CauseUsernsNotBuilt,
		Summary:  "this kernel was built without user namespaces (CONFIG_USER_NS), and bwrap needs them",
		Evidence: f.evidence(why, f.Host.UsernsBuild.Evidence),
		Remedy: where + " a kernel built with CONFIG_USER_NS=y (every major distribution's stock kernel is); " +
			"no setting adds them to this one"}
}

// emulated: gVisor, proot and Termux answer system calls themselves or sit on a kernel that
// gives apps no user namespaces; nothing can be set where the user is.
func emulated(f Facts) Diagnosis {
	advice := remedy.ForContainer(f.Host, remedy.Needs{})
	summary := "bwrap cannot build a sandbox under " + emulationName(f.Host)
	return Diagnosis{Cause: CauseEmulated, Summary: summary,
		Evidence: f.evidence(f.hostFacts()...),
		Remedy:   advice.Text}
}

func emulationName(host platform.Host) string {
	switch {
	case host.Emulation == platform.EmulationGVisor:
		return "gVisor"
	case host.Emulation == platform.EmulationProot:
		return "proot"
	case host.Termux:
		return "Termux (Android)"
	}
	return "Android"
}

// refused is bwrapkit's own refusal: the boundary could not be made as bwrapkit requires, or
// the bwrap was not trusted; the host may be fine.
func refused(f Facts) Diagnosis {
	summary, next := "bwrapkit refused to run the sandbox ("+string(f.Reason)+")", "run `bwrapkit doctor -v` for the facts"
	var unavailable *sandbox.UnavailableError
	switch {
	case errors.As(f.Err, &unavailable) && unavailable.Err != nil:
		summary += ": " + unavailable.Err.Error()
		next = unavailable.Remedy()
	case errors.As(f.Err, &unavailable):
		next = unavailable.Remedy()
	case f.Err != nil:
		summary += ": " + f.Err.Error()
	}
	if line, _, _ := strings.Cut(summary, "\n"); line != "" {
		summary = line
	}
	return Diagnosis{Cause: CauseRefused, Summary: summary,
		Evidence: f.evidence("sandbox: " + string(f.Reason) + " (bwrapkit's own check, not the host's)"),
		Remedy:   next}
}

func usernsLimit(f Facts, why string) Diagnosis {
	const setting, value = "user.max_user_namespaces", "15000"
	fix := sysctlFix(f, setting, value)
	return f.hostOnly(Diagnosis{Cause: CauseUsernsLimit,
		Summary:  "user namespaces are limited to none (user.max_user_namespaces), so bwrap cannot create one",
		Evidence: f.evidence(why, fmt.Sprintf("user.max_user_namespaces = %s", KnobText(f.Host.MaxUserNamespaces))),
		Remedy:   f.onHost() + "raise the limit now and persist it:\n" + strings.Join(fix.Commands, "\n"),
		Fix:      fix})
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
	return f.hostOnly(Diagnosis{Cause: CauseUnprivilegedClone,
		Summary:  "the kernel does not allow unprivileged user namespaces, which bwrap needs",
		Evidence: f.evidence(why, "kernel.unprivileged_userns_clone = "+KnobText(f.Host.UnprivilegedUsernsClone)),
		Remedy:   f.onHost() + "allow them now and persist it:\n" + strings.Join(fix.Commands, "\n"),
		Fix:      fix})
}

func usernsDenied(f Facts, why string) Diagnosis {
	return Diagnosis{Cause: CauseUsernsDenied, Commands: []string{f.Sudo() + "dmesg | grep -i -e denied -e userns"},
		Summary: "the kernel refuses this process a user namespace (EPERM) though no sysctl forbids it: " +
			"a chroot (the kernel refuses user namespaces inside one) or a security module",
		Evidence: f.evidence(append([]string{why}, f.hostFacts()...)...),
		Remedy: "run bwrapkit outside any chroot (schroot, a build root, `chroot`); " +
			"if there is none, look for the denial in the kernel log (" + f.Sudo() + "dmesg | grep -i -e denied -e userns)"}
}

// AppArmor is the diagnosis of AppArmor's userns restriction without a profile for f.Bwrap
// (or with a profile file that is not loaded).
func AppArmor(f Facts) Diagnosis {
	sudo := f.Sudo()
	onHost := f.onHost()
	lastResort := "last resort, lifting the restriction for every program on this host:\n" +
		sudo + "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
	evidence := []string{"kernel.apparmor_restrict_unprivileged_userns = " + KnobText(f.Host.AppArmorRestrictUserns),
		"AppArmor label of this process: " + f.Host.AppArmorLabel.String() + " (the restriction applies to unconfined processes)"}
	if f.AppArmorProfile != "" {
		evidence = append(evidence, f.AppArmorProfile+" grants userns to "+f.Bwrap+", yet the kernel still restricts it: the profile is not loaded")
	} else {
		evidence = append(evidence, "no profile in /etc/apparmor.d grants userns to "+f.Bwrap)
	}
	diagnosis := Diagnosis{Cause: CauseAppArmor,
		Summary:  "AppArmor restricts unprivileged user namespaces and no loaded profile lets " + f.Bwrap + " create one",
		Evidence: f.evidence(evidence...),
	}
	if f.AppArmorProfile != "" {
		load := sudo + "apparmor_parser -r " + remedy.Quote(f.AppArmorProfile)
		diagnosis.Remedy = onHost + "load the profile that grants it:\n" + load + "\n" + lastResort
		diagnosis.Commands = []string{load}
		return diagnosis
	}
	// The same profile `doctor --fix` writes, so a printed remedy and an applied one agree.
	profile, err := remedy.NewAppArmorProfile(f.Bwrap)
	if err != nil {
		// The fix stays, without a profile: --fix then says why it cannot write one.
		diagnosis.Remedy = onHost + "move bwrap to a plain path (" + err.Error() + "), then give it an AppArmor profile that grants userns;\n" + lastResort
		diagnosis.Fix = &remedy.Fix{Kind: remedy.AppArmor, Bwrap: f.Bwrap}
		return f.hostOnly(diagnosis)
	}
	commands := profile.Commands(sudo)
	diagnosis.Remedy = onHost + "give this bwrap a profile that grants userns:\n" + strings.Join(commands, "\n") + "\n" + lastResort
	diagnosis.Fix = profile.Fix(sudo)
	return f.hostOnly(diagnosis)
}

// containerNeeds is what this container's confinement must give up, from the facts: seccomp
// when a filter is on (or unknown), AppArmor when a profile confines this process, and the
// masked /proc when no proc mount is fully visible. bwrap stops at the first refusal, so a
// remedy that lifts only that one leaves the next (Docker's default: the filter, then the
// proc mount); the facts show them all at once.
func containerNeeds(host platform.Host) remedy.Needs {
	return remedy.Needs{Seccomp: !host.SeccompState.Known || host.SeccompState.Mode == 2, AppArmor: mayConfine(host), Proc: procCovered(host)}
}

// procCovered: the mount table was read and no proc mount in it is fully visible, so the
// kernel will refuse the sandbox a fresh proc (mnt_already_visible).
func procCovered(host platform.Host) bool {
	if !host.Proc.Known || host.Emulation == platform.EmulationGVisor {
		return false
	}
	_, visible := host.Proc.VisibleProc()
	return !visible
}

// mayConfine: a profile confines this process, or AppArmor is on and the label could not be
// read; either way the runtime's remedy must lift the profile too.
func mayConfine(host platform.Host) bool {
	return confined(host) || host.AppArmorEnabled && !host.AppArmorLabel.Known
}

func withCommands(d Diagnosis, advice remedy.Container) Diagnosis {
	d.Remedy = advice.Text
	if len(advice.Commands) > 0 {
		d.Remedy += "\n" + strings.Join(advice.Commands, "\n")
		d.Commands = advice.Commands
	}
	return d
}

// container: the namespace itself is refused, by the runtime's seccomp filter or by the
// AppArmor profile this process runs under (docker-default denies what Ubuntu's restriction
// would otherwise decide).
func container(f Facts, why string) Diagnosis {
	host := f.Host
	var by []string
	if seccompFiltered(host) {
		by = append(by, "its seccomp filter")
	}
	if confined(host) {
		by = append(by, "its AppArmor profile "+host.AppArmorLabel.Label)
	}
	if len(by) == 0 {
		by = append(by, "its seccomp filter or capability set")
	}
	d := Diagnosis{Cause: CauseContainer,
		Summary:  fmt.Sprintf("the %s refuses bwrap a user namespace (%s)", containerName(host), strings.Join(by, " and ")),
		Evidence: f.evidence(append([]string{why}, f.hostFacts()...)...)}
	if host.Container == "" {
		// Confined by a profile outside any known container (a snap, a service's profile).
		d.Summary = "the AppArmor profile " + host.AppArmorLabel.Label + " this process runs under refuses bwrap a user namespace"
		d.Remedy = "run bwrapkit outside the program or service confined by " + host.AppArmorLabel.Label +
			" (`aa-status` lists the confined processes), or give that profile a `userns,` rule"
		return d
	}
	return withCommands(d, remedy.ForContainer(host, containerNeeds(host)))
}

// slave: "Failed to make / slave" is bwrap's first mount in its new mount namespace; under a
// confining AppArmor profile EACCES is that profile's `deny mount` (docker-default has one),
// and EPERM is a seccomp filter on mount(2) or a missing capability.
func slave(f Facts, fail Failure) Diagnosis {
	host := f.Host
	switch {
	case fail.Errno == "Permission denied" && confined(host):
		d := Diagnosis{Cause: CauseContainerMount,
			Summary:  "the AppArmor profile " + host.AppArmorLabel.Label + " denies bwrap's mounts (\"Failed to make / slave: Permission denied\")",
			Evidence: f.evidence(f.hostFacts()...)}
		if host.Container == "" {
			d.Remedy = "run bwrapkit outside the program confined by " + host.AppArmorLabel.Label + ", or let that profile allow mounts"
			return d
		}
		return withCommands(d, remedy.ForContainer(host, remedy.Needs{AppArmor: true}))
	case fail.Errno == "Operation not permitted" && host.Container != "" && (seccompFiltered(host) || !host.SeccompState.Known):
		d := Diagnosis{Cause: CauseContainerMount,
			Summary:  "the " + containerName(host) + "'s seccomp filter refuses bwrap's mounts (\"Failed to make / slave: Operation not permitted\")",
			Evidence: f.evidence(f.hostFacts()...)}
		return withCommands(d, remedy.ForContainer(host, remedy.Needs{Seccomp: true, AppArmor: mayConfine(host), Proc: procCovered(host)}))
	}
	return unknown(f, fail)
}

// pivotRoot: bwrap got its namespaces and mounts, and pivot_root(2) into the new root was
// refused. Docker's default filter allows the namespaces only to a container given
// CAP_SYS_ADMIN, and still denies pivot_root: its seccomp filter is the cause.
func pivotRoot(f Facts, fail Failure) Diagnosis {
	host := f.Host
	if fail.Errno != "Operation not permitted" || host.Container == "" || !seccompFiltered(host) && host.SeccompState.Known {
		return unknown(f, fail)
	}
	d := Diagnosis{Cause: CauseContainerMount,
		Summary:  "the " + containerName(host) + "'s seccomp filter refuses bwrap's pivot_root (\"pivot_root: Operation not permitted\"); added capabilities do not lift it",
		Evidence: f.evidence(f.hostFacts()...)}
	return withCommands(d, remedy.ForContainer(host, remedy.Needs{Seccomp: true, AppArmor: mayConfine(host), Proc: procCovered(host)}))
}

// proc: the kernel lets a user namespace mount a fresh proc only while some proc mount of
// its mount namespace is fully visible (mnt_already_visible in fs/namespace.c). The mount
// table proves that or not; bwrap's message only says which step failed.
func proc(f Facts, fail Failure) Diagnosis {
	host := f.Host
	view := host.Proc
	if host.Emulation == platform.EmulationGVisor {
		// gVisor's proc is its own: the kernel's rule does not apply, and its mount table proves nothing.
		return unknown(f, fail)
	}
	if !view.Known {
		d := unknown(f, fail)
		d.Summary = f.Bwrap + " could not mount the sandbox's proc, and whether a mask hides part of /proc is unknown: " + ProcText(view)
		return d
	}
	if visible, ok := view.VisibleProc(); ok {
		d := unknown(f, fail)
		d.Summary = f.Bwrap + " could not mount the sandbox's proc, though " + visible + " is fully visible, so masks are not the cause"
		return d
	}
	d := Diagnosis{Cause: CauseProcMasked,
		Summary:  "no proc mount here is fully visible (the container covers parts of /proc), so the kernel refuses the sandbox a fresh /proc",
		Evidence: f.evidence(f.hostFacts()...)}
	if len(view.Mounts) == 0 {
		// A chroot or a build root without proc: there is nothing for a new proc to match.
		d.Summary = "no proc is mounted here, so the kernel refuses the sandbox a fresh /proc (it needs one fully visible proc to allow another)"
		d.Remedy = "mount proc where bwrapkit runs (as root: mount -t proc proc /proc), or run bwrapkit where it is mounted"
		return d
	}
	if host.Container == "" {
		d.Summary = "no proc mount here is fully visible, so the kernel refuses the sandbox a fresh /proc"
		d.Remedy = "run bwrapkit where /proc is not covered (" + orText(strings.Join(view.Masks(), ", "), "a read-only or partial proc mount") +
			"); a systemd unit's ProtectKernelTunables=, ProtectProc= or InaccessiblePaths= cover it so"
		return d
	}
	return withCommands(d, remedy.ForContainer(host, remedy.Needs{Proc: true, AppArmor: mayConfine(host)}))
}

// disableUserns: bwrapkit always passes --disable-userns (no nested user namespaces inside its
// sandbox), and bwrap implements it by writing 1 to /proc/sys/user/max_user_namespaces of the
// sandbox's own user namespace. A host that does not let it write there is not broken; it
// cannot host bwrapkit's boundary as it is.
func disableUserns(f Facts, fail Failure) Diagnosis {
	host := f.Host
	why := "bwrapkit's sandbox forbids nested user namespaces (bwrap --disable-userns), which writes 1 to " +
		"/proc/sys/user/max_user_namespaces inside the sandbox's own user namespace"
	d := Diagnosis{Cause: CauseDisableUserns,
		Summary:  "bwrap could not forbid nested user namespaces, as bwrapkit requires: /proc/sys/user/max_user_namespaces: " + orText(fail.Errno, "refused"),
		Evidence: f.evidence(append([]string{why}, f.hostFacts()...)...)}
	switch {
	case host.Emulation == platform.EmulationGVisor:
		d.Remedy = "gVisor has no /proc/sys/user/max_user_namespaces (google/gvisor#11210): there is no fix inside gVisor; " +
			"run bwrapkit in a container started by runc, or outside the container"
		return d
	case fail.Errno == "Read-only file system" && host.Runtime == platform.RuntimeNspawn:
		return withCommands(d, remedy.NspawnWritableProcSys(!host.InitialUserNamespace))
	case fail.Errno == "Read-only file system" && host.Container != "":
		return withCommands(d, remedy.ForContainer(host, remedy.Needs{Proc: true, AppArmor: mayConfine(host)}))
	case fail.Errno == "Read-only file system" && readOnlyProcSys(host.Proc) != "":
		d.Evidence = append(d.Evidence, "the mount table shows "+readOnlyProcSys(host.Proc)+" mounted read-only")
		d.Remedy = "run bwrapkit where " + readOnlyProcSys(host.Proc) + " is not a read-only mount (a systemd unit's " +
			"ProtectKernelTunables=, an enclosing sandbox's read-only /proc/sys make it so)"
		return d
	case fail.Errno == "Permission denied" && host.Runtime == platform.RuntimeIncus:
		d.Remedy = "on the host, upgrade Incus: its AppArmor policy denied containers writes to /proc/sys/user until " +
			"lxc/incus#1937 (April 2025); then restart the container"
		return d
	case fail.Errno == "Permission denied" && confined(host):
		d.Remedy = "the AppArmor profile " + host.AppArmorLabel.Label + " denies writing /proc/sys/user; " + f.onHost() +
			"let the container's profile write /proc/sys/user/** (bwrap writes only its own user namespace's limit there)"
		return d
	case fail.Errno == "No such file or directory":
		d.Remedy = "this kernel has no /proc/sys/user/max_user_namespaces (Linux before 4.9): boot a newer kernel"
		return d
	}
	d.Summary += " (bwrapkit cannot tell what refuses it here)"
	d.Remedy = "look for the denial in the kernel log (" + f.Sudo() + "dmesg | grep -i -e denied -e max_user_namespaces); " +
		"the facts above are all bwrapkit could read"
	d.Commands = []string{f.Sudo() + "dmesg | grep -i -e denied -e max_user_namespaces"}
	return d
}

// readOnlyProcSys is the proc mount that /proc/sys/user resolves through when that mount is
// read-only, "" when it is writable or the mount table shows no proc there (or was unreadable).
// The deepest mount point on the path wins; of two on the same point, the later one.
func readOnlyProcSys(view platform.ProcView) string {
	var seen *platform.ProcMount
	for i, m := range view.Mounts {
		switch m.MountPoint {
		case "/proc", "/proc/sys", "/proc/sys/user":
			if seen == nil || len(m.MountPoint) >= len(seen.MountPoint) {
				seen = &view.Mounts[i]
			}
		}
	}
	if seen == nil || !seen.ReadOnly {
		return ""
	}
	return seen.MountPoint
}

func mountLimit(f Facts) Diagnosis {
	fix := f.onHost() + f.Sudo() + "sysctl -w fs.mount-max=100000"
	return Diagnosis{Cause: CauseMountLimit,
		Summary:  "the kernel's limit on mounts per namespace (fs.mount-max) was reached while bwrap built the sandbox",
		Evidence: f.evidence("mount(2) failed with ENOSPC, which bwrap reports as \"Limit exceeded\""),
		Remedy:   "raise fs.mount-max (typically 100000), or unmount what piles up (a mount loop?):\n" + fix,
		Commands: []string{f.Sudo() + "sysctl -w fs.mount-max=100000"}}
}

func launchTimeout(f Facts) Diagnosis {
	return Diagnosis{Cause: CauseLaunchTimeout,
		Summary:  f.Bwrap + " hung while building the sandbox and was killed",
		Evidence: f.evidence("no child-pid within the launch bound"),
		Remedy:   "check for a stuck mount (NFS, FUSE) under the paths bound into the sandbox, and for heavy load; then run again"}
}

// unknown shows the facts instead of a name: the step bwrap failed at and what the host is.
func unknown(f Facts, fail Failure) Diagnosis {
	line := lastLine(f.Stderr)
	if line == "" {
		line = "(bwrap printed nothing)"
	}
	evidence := []string{"sandbox: " + string(f.Reason)}
	if fail.Step != StepNone && fail.Step != StepOther {
		step := "the step that failed: " + string(fail.Step)
		if fail.Path != "" {
			step += " (" + fail.Path + ")"
		}
		if fail.Errno != "" {
			step += ": " + fail.Errno
		}
		evidence = append(evidence, step)
	}
	// The kernel logs the refusals an LSM makes ("apparmor=\"DENIED\"") and a proc mount it
	// finds too revealing ("VFS: Mount too revealing"); a container usually cannot read it.
	look := f.Sudo() + `dmesg | grep -i -e denied -e "too revealing"`
	where := ""
	if f.Host.Container != "" {
		where = ", on the host"
	}
	next := "no cause bwrapkit knows matches these facts; bwrap's message above is the best lead (`bwrapkit doctor -v` shows the host facts). " +
		"Look for the kernel's refusal in its log" + where + ":\n" + look
	if f.Host.Emulation == platform.EmulationGVisor {
		// Whatever gVisor lacks here, nothing inside it can be set to add it, and its log is not the kernel's.
		next = remedy.ForContainer(f.Host, remedy.Needs{}).Text + "; bwrap's message above is the best lead"
		look = ""
	}
	d := Diagnosis{Cause: CauseUnknown, Summary: f.Bwrap + " could not build the sandbox: " + line,
		Evidence: f.evidence(append(evidence, f.hostFacts()...)...),
		Remedy:   next}
	if look != "" {
		d.Commands = []string{look}
	}
	return d
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

func seccomp(f Facts) Diagnosis {
	return Diagnosis{Cause: CauseSeccomp,
		Summary:  "a seccomp filter on this process forbids creating user namespaces",
		Evidence: f.evidence(append([]string{"Seccomp: 2 in /proc/self/status"}, f.hostFacts()...)...),
		Remedy: "run bwrapkit outside the program or service that installs the filter (a systemd unit's " +
			"RestrictNamespaces= or SystemCallFilter=, another sandbox, a container runtime)"}
}
