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
	if host.Container != "" {
		summary += ", in a " + host.Container + " container"
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
		fmt.Sprintf("seccomp mode %d, no_new_privs %v, CAP_SYS_ADMIN %v, initial user namespace %v",
			host.Seccomp, host.NoNewPrivs, host.CapSysAdmin, host.InitialUserNamespace),
	}
	return strings.Join(lines, "\n")
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
