package doctor

import (
	"context"
	"fmt"
	"strings"
)

// checkUserns asks whether this process may create user namespaces, the way an unprivileged
// bwrap does: the kernel's knobs, then a real clone(CLONE_NEWUSER) of the probe.
func (s *session) checkUserns(context.Context) Check {
	facts := s.facts()
	host := facts.Host
	setuid := facts.Setuid
	// The question is about this process, not the binary: a setuid bwrap is judged below.
	facts.Setuid = false
	_, knobBlocks := host.UserNamespacesBlocked()
	detail := strings.Join([]string{
		"clone(CLONE_NEWUSER) by the doctor: " + orSucceeded(errnoText(facts)),
		"kernel.unprivileged_userns_clone: " + knobText(host.UnprivilegedUsernsClone),
		"user.max_user_namespaces: " + knobText(host.MaxUserNamespaces),
		"user_namespace.enable: " + knobText(host.UsernsModuleEnable),
		"kernel.apparmor_restrict_unprivileged_userns: " + knobText(host.AppArmorRestrictUserns),
		fmt.Sprintf("initial user namespace: %v, CAP_SYS_ADMIN: %v", host.InitialUserNamespace, host.CapSysAdmin),
	}, "\n")

	if knobBlocks || facts.UsernsErr != 0 {
		diagnosis := Diagnose(facts)
		check := Check{Status: StatusFail, Summary: diagnosis.Summary,
			Detail: detail + "\n" + strings.Join(diagnosis.Evidence, "\n"), Remedy: diagnosis.Remedy, Fix: diagnosis.Fix}
		if setuid && diagnosis.Cause == CauseUnprivilegedClone {
			check.Status = StatusWarn
			check.Summary += "; the setuid bwrap in use works without them"
		}
		return check
	}
	if host.AppArmorRestrictsUserns() {
		if facts.AppArmorProfile != "" {
			return Check{Status: StatusOK, Detail: detail,
				Summary: fmt.Sprintf("available; AppArmor restricts them, and %s grants them to %s", facts.AppArmorProfile, facts.Bwrap)}
		}
		diagnosis := appArmor(facts)
		return Check{Status: StatusWarn, Summary: diagnosis.Summary + " (launch will tell)", Detail: detail,
			Remedy: diagnosis.Remedy, Fix: diagnosis.Fix}
	}
	summary := "available to unprivileged processes"
	if host.MaxUserNamespaces.Present {
		summary += fmt.Sprintf(" (user.max_user_namespaces = %d)", host.MaxUserNamespaces.Value)
	}
	return Check{Status: StatusOK, Summary: summary, Detail: detail}
}

func errnoText(facts Facts) string {
	if facts.UsernsErr == 0 {
		return ""
	}
	return errnoName(facts.UsernsErr) + " (" + facts.UsernsErr.Error() + ")"
}
