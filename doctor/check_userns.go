package doctor

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/doctor/diagnose"
	"github.com/bwrapkit/bwrapkit/doctor/report"
)

// checkUserns asks whether this process may create user namespaces, the way an unprivileged
// bwrap does: the kernel's knobs, then a real clone(CLONE_NEWUSER) of the probe.
func (s *session) checkUserns(context.Context) report.Check {
	facts := s.facts()
	host := facts.Host
	setuid := facts.Setuid
	// The question is about this process, not the binary: a setuid bwrap is judged below.
	facts.Setuid = false
	_, knobBlocks := host.UserNamespacesBlocked()
	detail := strings.Join([]string{
		"clone(CLONE_NEWUSER) by the doctor: " + orSucceeded(errnoText(facts)),
		"kernel.unprivileged_userns_clone: " + diagnose.KnobText(host.UnprivilegedUsernsClone),
		"user.max_user_namespaces: " + diagnose.KnobText(host.MaxUserNamespaces),
		"user_namespace.enable: " + diagnose.KnobText(host.UsernsModuleEnable),
		"kernel.apparmor_restrict_unprivileged_userns: " + diagnose.KnobText(host.AppArmorRestrictUserns),
		fmt.Sprintf("initial user namespace: %v, CAP_SYS_ADMIN: %v", host.InitialUserNamespace, host.CapSysAdmin),
		"AppArmor label: " + diagnose.LabelText(host),
		"seccomp: " + diagnose.SeccompText(host.SeccompState),
	}, "\n")

	if knobBlocks || facts.UsernsErr != 0 {
		diagnosis := diagnose.Diagnose(facts)
		check := report.Check{Status: report.StatusFail, Summary: diagnosis.Summary,
			Detail: detail + "\n" + strings.Join(diagnosis.Evidence, "\n"), Remedy: diagnosis.Remedy, Fix: diagnosis.Fix, RemedyCommands: diagnosis.RemedyCommands()}
		if setuid && diagnosis.Cause == diagnose.CauseUnprivilegedClone {
			check.Status = report.StatusWarn
			check.Summary += "; the setuid bwrap in use works without them"
		}
		return check
	}
	if diagnose.AppArmorRestrictsThisProcess(host) {
		if facts.AppArmorProfile != "" {
			return report.Check{Status: report.StatusOK, Detail: detail,
				Summary: fmt.Sprintf("available; AppArmor restricts them, and %s grants them to %s", facts.AppArmorProfile, facts.Bwrap)}
		}
		diagnosis := diagnose.AppArmor(facts)
		return report.Check{Status: report.StatusWarn, Summary: diagnosis.Summary + " (launch will tell)", Detail: detail,
			Remedy: diagnosis.Remedy, Fix: diagnosis.Fix, RemedyCommands: diagnosis.RemedyCommands()}
	}
	summary := "available to unprivileged processes"
	if host.MaxUserNamespaces.Present {
		summary += fmt.Sprintf(" (user.max_user_namespaces = %d)", host.MaxUserNamespaces.Value)
	}
	return report.Check{Status: report.StatusOK, Summary: summary, Detail: detail}
}

func errnoText(facts diagnose.Facts) string {
	if facts.UsernsErr == 0 {
		return ""
	}
	return unix.ErrnoName(facts.UsernsErr) + " (" + facts.UsernsErr.Error() + ")"
}

func orSucceeded(errText string) string {
	if errText == "" {
		return "succeeded"
	}
	return errText
}
