package doctor

import (
	"context"
	"fmt"
	"strings"

	"github.com/bwrapkit/bwrapkit/doctor/diagnose"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/platform"
)

func (s *session) checkPlatform(context.Context) report.Check {
	host := s.host.get()
	summary := host.OS + "/" + host.Arch
	if host.Kernel != "" {
		summary += ", kernel " + host.Kernel
	}
	if host.Kind == platform.KindWSL2 {
		summary += ", WSL2"
	}
	switch {
	case host.Container == platform.ContainerOther:
		// A cgroup namespace or a manager's declaration proves a container, not whose.
		summary += ", in a container"
	case host.Runtime != "" && host.Runtime != host.Container:
		summary += ", in a " + host.Runtime + " container"
	case host.Container != "":
		summary += ", in a " + host.Container + " container"
	case host.VirtualMachine != "":
		summary += ", in a " + host.VirtualMachine + " virtual machine"
	}
	if host.Emulation != "" {
		summary += ", under " + host.Emulation
	}
	detail := platformDetail(host)
	if _, unsupported := host.Unsupported(); unsupported {
		diagnosis := diagnose.Diagnose(s.facts())
		return report.Check{Status: report.StatusFail, Summary: diagnosis.Summary, Detail: detail, Remedy: diagnosis.Remedy, RemedyCommands: diagnosis.RemedyCommands()}
	}
	if len(host.Problems) > 0 {
		return report.Check{Status: report.StatusWarn, Summary: summary + "; some host facts could not be read",
			Detail: detail + "\n" + strings.Join(host.Problems, "\n"),
			Remedy: "the diagnosis below may miss a cause; the files listed in the detail (-v) were unreadable"}
	}
	return report.Check{Status: report.StatusOK, Summary: summary, Detail: detail}
}

func platformDetail(host platform.Host) string {
	lines := []string{
		"kind: " + host.Kind,
		"kernel.unprivileged_userns_clone: " + diagnose.KnobText(host.UnprivilegedUsernsClone),
		"user.max_user_namespaces: " + diagnose.KnobText(host.MaxUserNamespaces),
		"user_namespace.enable: " + diagnose.KnobText(host.UsernsModuleEnable),
		"kernel.apparmor_restrict_unprivileged_userns: " + diagnose.KnobText(host.AppArmorRestrictUserns),
		fmt.Sprintf("AppArmor: %v, SELinux: %s", host.AppArmorEnabled, orUnknown(host.SELinux)),
		"AppArmor label: " + diagnose.LabelText(host),
		fmt.Sprintf("seccomp: %s, no_new_privs %v, CAP_SYS_ADMIN %v, initial user namespace %v",
			diagnose.SeccompText(host.SeccompState), host.NoNewPrivs, host.CapSysAdmin, host.InitialUserNamespace),
		"user namespaces in the kernel build: " + orUnknown(host.UsernsBuild.State) + usernsBuildEvidence(host.UsernsBuild),
	}
	if host.Emulation != platform.EmulationGVisor {
		// gVisor's mount table describes its own proc, which the kernel's rule does not govern.
		lines = append(lines, "proc: "+diagnose.ProcText(host.Proc))
	}
	if host.Runtime != "" || host.Emulation != "" || host.VirtualMachine != "" || len(host.RuntimeEvidence) > 0 {
		lines = append(lines, fmt.Sprintf("runtime: %s, emulation: %s, virtual machine: %s", orUnknown(host.Runtime),
			orNone(host.Emulation), orNone(host.VirtualMachine)))
		for _, evidence := range host.RuntimeEvidence {
			lines = append(lines, "  "+evidence)
		}
	}
	if host.Tracer.PID != 0 {
		lines = append(lines, fmt.Sprintf("traced by pid %d (%s)", host.Tracer.PID, orUnknown(host.Tracer.Comm)))
	}
	lines = append(lines, "cgroup: "+cgroupText(host.Cgroup))
	return strings.Join(lines, "\n")
}

// cgroupText says where this process's cgroup is and whether it was delegated: bwrapkit
// writes no cgroup, and a delegated subtree is the only place a later pids or memory
// bound could go without root (RLIMIT_NPROC does not bound a root caller).
func cgroupText(cgroup platform.Cgroup) string {
	switch {
	case !cgroup.Known:
		return "unknown (" + orUnknown(cgroup.Err) + ")"
	case cgroup.Version != 2:
		return "v1 only: no delegated subtree (bwrapkit writes no cgroup)"
	case cgroup.Delegated:
		return fmt.Sprintf("v2 %s, delegated to this user (bwrapkit writes no cgroup)", cgroup.Path)
	}
	return fmt.Sprintf("v2 %s, not delegated to this user (bwrapkit writes no cgroup)", cgroup.Path)
}

func usernsBuildEvidence(build platform.UsernsBuild) string {
	if build.Evidence == "" {
		return ""
	}
	return " (" + build.Evidence + ")"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
