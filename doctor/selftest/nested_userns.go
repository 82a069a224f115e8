package selftest

import (
	"context"
	"syscall"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
)

// NestedUserns is the self-test of its name; see doctor/README.md for why it can fail and pass.
func NestedUserns(ctx context.Context, env *Env, launched Launched) report.Check {
	if !env.Features.Has("disable-userns") {
		return report.Check{Status: report.StatusSkip, Summary: "this bwrap has no --disable-userns (bubblewrap 0.8.0+), so nested user namespaces stay possible (see bwrap.features)"}
	}
	observation, err := Decode[probe.UsernsObservation](env.Run(ctx, ProbeRun{Name: "userns"}))
	if err != nil {
		return Failed("the user namespace probe did not run", err)
	}
	return nestedUsernsVerdict(observation)
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
