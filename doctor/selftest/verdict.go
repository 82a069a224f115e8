package selftest

import "github.com/bwrapkit/bwrapkit/doctor/report"

// The self-tests' decisions: pure functions over what the probe observed inside and what the
// doctor saw on the host. The host side is the proof; the probe's word alone is not.
const boundaryRemedy = "this bwrap does not hold the boundary; do not run untrusted code with it: " +
	"run `bwrapkit install` for a verified bwrap, and report this with `bwrapkit doctor --json`"

func pass(summary, detail string) report.Check {
	return report.Check{Status: report.StatusOK, Summary: summary, Detail: detail}
}

func breach(summary, detail string) report.Check {
	return report.Check{Status: report.StatusFail, Summary: summary, Detail: detail, Remedy: boundaryRemedy}
}

func orSucceeded(errText string) string {
	if errText == "" {
		return "succeeded"
	}
	return errText
}
