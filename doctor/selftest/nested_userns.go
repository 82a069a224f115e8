package selftest

import (
	"context"
	"syscall"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// NestedUserns is the self-test of its name; see doctor/README.md for why it can fail and pass.
func NestedUserns(env *Env, _ sandbox.Policy, request *probe.Request) (Part, error) {
	if !env.Features.Has("disable-userns") {
		skip := report.Check{Status: report.StatusSkip, Summary: "this bwrap has no --disable-userns (bubblewrap 0.8.0+), so nested user namespaces stay possible (see bwrap.features)"}
		return Part{Judge: func(context.Context, Launched) report.Check { return skip }}, nil
	}
	request.Userns = true
	return Part{Judge: func(_ context.Context, launched Launched) report.Check {
		if launched.Observation.Userns == nil {
			return missing("user namespace attempt")
		}
		return nestedUsernsVerdict(*launched.Observation.Userns)
	}}, nil
}

// nestedUsernsVerdict: creating a user namespace inside was refused.
func nestedUsernsVerdict(observation probe.UsernsObservation) report.Check {
	switch syscall.Errno(observation.Errno) {
	case 0:
		return breach("code inside the sandbox can create a user namespace", "clone(CLONE_NEWUSER) succeeded")
	case syscall.ENOSPC, syscall.EUSERS, syscall.EPERM:
		return pass("creating a user namespace inside is refused ("+observation.Error+")", "")
	}
	return report.Check{Status: report.StatusFail, Summary: "cannot tell whether a user namespace could be created inside: " + observation.Error}
}
