package selftest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// FDIsolation is the self-test of its name; see doctor/README.md for why it can fail and pass.
func FDIsolation(env *Env, _ sandbox.Policy, request *probe.Request) (Part, error) {
	fixture := env.Scene
	// Opened without O_CLOEXEC, as a descriptor bwrapkit inherited from its caller would
	// be, and held for the launch: sandbox.Run must mark every descriptor above stderr
	// close-on-exec before bwrap starts. (A child the doctor starts outside sandbox.Run,
	// such as the userns check's clone, may inherit it: that child is on the host's side
	// of the boundary anyway.)
	canary, err := syscall.Open(fixture.fdCanary, syscall.O_RDONLY, 0)
	if err != nil {
		return Part{}, fmt.Errorf("the canary descriptor could not be opened: %w", err)
	}
	request.FDs = true
	return Part{
		Cleanup: func() { syscall.Close(canary) },
		Judge: func(_ context.Context, launched Launched) report.Check {
			if launched.Observation.FDs == nil {
				return missing("descriptor listing")
			}
			return fdIsolationVerdict(*launched.Observation.FDs, filepath.Base(fixture.fdCanary))
		},
	}, nil
}

// fdRemedy: bwrap gives the command every descriptor it inherits (an agent's socket, a CI
// runner's log pipe), so keeping them out is the runner's job.
const fdRemedy = "bwrap hands the command every descriptor it inherits, so the process that starts bwrap " +
	"must mark all of them above stderr close-on-exec first, and this bwrapkit did not: report it with " +
	"`bwrapkit doctor --json`; until it is fixed, do not run untrusted code from a process holding sockets, " +
	"pipes or secret files open"

// fdIsolationVerdict: the command holds stdin, stdout and stderr and nothing else, in
// particular not the canary the doctor held open without close-on-exec.
func fdIsolationVerdict(observation probe.FDObservation, canary string) report.Check {
	var held, leaked []string
	for _, entry := range observation.FDs {
		described := fmt.Sprintf("%d -> %s", entry.FD, entry.Target)
		held = append(held, described)
		if entry.FD > 2 {
			if canary != "" && strings.Contains(entry.Target, canary) {
				described += " (the doctor's canary)"
			}
			leaked = append(leaked, described)
		}
	}
	detail := "inside: " + strings.Join(held, ", ")
	switch {
	case observation.Error != "":
		return report.Check{Status: report.StatusFail, Summary: "the probe could not list its descriptors: " + observation.Error}
	case len(leaked) > 0:
		return report.Check{Status: report.StatusFail, Summary: "the command inherited descriptors beyond stdin, stdout and stderr: " + strings.Join(leaked, ", "),
			Detail: detail, Remedy: fdRemedy}
	case len(observation.FDs) == 0:
		return report.Check{Status: report.StatusFail, Summary: "the probe listed no descriptors, not even its stdout"}
	}
	return pass("the command holds only stdin, stdout and stderr; a descriptor the doctor held open without close-on-exec stayed outside", detail)
}
