package selftest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
	"github.com/bwrapkit/bwrapkit/sandbox/seccomp"
)

// Seccomp is the self-test of its name; see doctor/README.md for why it can fail and pass.
// Which errno each denied call gets is the filter's own list, seccomp.Denied; which calls
// must be denied at all is the probe's list of those it can try (probe.SeccompAttempts),
// written out apart from the filter's: a rule taken out of the filter's table would
// otherwise leave its expectation with it, and the check would pass on a filter that no
// longer denies the call.
func Seccomp(_ *Env, _ sandbox.Policy, request *probe.Request) (Part, error) {
	expected, untried, lost := seccompExpectations(seccomp.Denied(), probe.SeccompAttempts())
	for _, rule := range expected {
		request.Seccomp = append(request.Seccomp, rule.Syscall)
	}
	return Part{Judge: func(_ context.Context, launched Launched) report.Check {
		if launched.Observation.Seccomp == nil {
			return missing("system call attempts")
		}
		return seccompVerdict(*launched.Observation.Seccomp, expected, untried, lost)
	}}, nil
}

// seccompExpectations splits the filter's rules into those the probe tries (each once,
// with the errno the rule gives) and the rest, named for the report; lost are the calls
// the probe tries, all of which must be denied, that the filter's list no longer names.
func seccompExpectations(denied []seccomp.Rule, attemptable []string) (tried []seccomp.Rule, untried, lost []string) {
	for _, rule := range denied {
		switch {
		case slices.Contains(attemptable, rule.Syscall) && !slices.ContainsFunc(tried, func(r seccomp.Rule) bool { return r.Syscall == rule.Syscall }):
			tried = append(tried, rule)
		case !slices.Contains(attemptable, rule.Syscall) && !slices.Contains(untried, rule.Syscall):
			untried = append(untried, rule.Syscall)
		}
	}
	for _, name := range attemptable {
		if !slices.ContainsFunc(denied, func(r seccomp.Rule) bool { return r.Syscall == name }) {
			lost = append(lost, name)
		}
	}
	slices.Sort(lost)
	return tried, untried, lost
}

// seccompVerdict: the process runs under a filter (Seccomp: 2) that still names every call
// the probe tries, each denied call got the rule's errno, and the ordinary calls tried
// worked.
func seccompVerdict(observed probe.SeccompObservation, expected []seccomp.Rule, untried, lost []string) report.Check {
	var wrong, refused, detail []string
	for _, rule := range expected {
		got := "(not tried)"
		for _, attempt := range observed.Denied {
			if attempt.Syscall == rule.Syscall {
				got = orSucceeded(attempt.Errno)
			}
		}
		detail = append(detail, fmt.Sprintf("%s: %s (the filter: %s)", rule.Syscall, got, rule.Errno))
		if got != rule.Errno {
			wrong = append(wrong, fmt.Sprintf("%s %s, not %s", rule.Syscall, got, rule.Errno))
		}
	}
	for _, attempt := range observed.Allowed {
		detail = append(detail, "allowed "+attempt.Syscall+": "+orSucceeded(attempt.Errno))
		if attempt.Errno != "" {
			refused = append(refused, attempt.Syscall+" ("+attempt.Errno+")")
		}
	}
	detail = append(detail, fmt.Sprintf("Seccomp: %s, Seccomp_filters: %s", observed.Mode, observed.Filters),
		"not tried here: "+strings.Join(untried, ", ")+" (the clone of a user namespace is nested-userns's, the setuid modes setuid-refused's)")
	switch {
	case observed.Mode != "2":
		return breach(fmt.Sprintf("the command runs without a seccomp filter (Seccomp: %q)", observed.Mode), strings.Join(detail, "\n"))
	case len(lost) > 0:
		return breach("the filter no longer denies calls it must: "+strings.Join(lost, ", "), strings.Join(detail, "\n"))
	case len(wrong) > 0:
		return breach("calls the filter denies got through or got another answer: "+strings.Join(wrong, "; "), strings.Join(detail, "\n"))
	case len(expected) == 0:
		return report.Check{Status: report.StatusFail, Summary: "no denied call was tried", Detail: strings.Join(detail, "\n")}
	case len(refused) > 0:
		return report.Check{Status: report.StatusFail, Summary: "the filter refuses ordinary calls: " + strings.Join(refused, ", "), Detail: strings.Join(detail, "\n"), Remedy: boundaryRemedy}
	}
	return pass(fmt.Sprintf("a seccomp filter is in force: %d denied calls got the filter's errno, %d ordinary calls worked", len(expected), len(observed.Allowed)), strings.Join(detail, "\n"))
}
