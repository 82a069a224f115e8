package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/sandbox"
)

// launchOutcome is the launch check's run, which launch-proof judges.
type launchOutcome struct {
	result      sandbox.Result
	observation launchObservation
}

// checkLaunch builds a sandbox through sandbox.Run and runs the probe in it; when that fails
// it says why, from the host's facts first and bwrap's stderr second.
func (s *session) checkLaunch(ctx context.Context) Check {
	res, err := s.runProbe(ctx, probeRun{name: "launch"})
	var unavailable *sandbox.UnavailableError
	if errors.As(err, &unavailable) {
		facts := s.facts()
		facts.Reason, facts.Missing, facts.Stderr = unavailable.Reason, unavailable.Missing, unavailable.Stderr
		diagnosis := Diagnose(facts)
		detail := append([]string{"sandbox.Run: " + string(unavailable.Reason)}, diagnosis.Evidence...)
		return Check{Status: StatusFail, Summary: "no sandbox: " + diagnosis.Summary,
			Detail: strings.Join(detail, "\n"), Remedy: diagnosis.Remedy, Fix: diagnosis.Fix}
	}
	var fixture *fixtureError
	switch {
	case errors.As(err, &fixture):
		return Check{Status: StatusFail, Summary: "the launch could not be tried: " + err.Error(),
			Remedy: "the self-tests make their directory under ~/.cache/bwrapkit/selftest ($XDG_CACHE_HOME), or $TMPDIR where that cannot be made: make one of them writable, e.g. TMPDIR=/var/tmp bwrapkit doctor"}
	case err != nil:
		return Check{Status: StatusFail, Summary: "the launch could not be tried: " + err.Error(),
			Remedy: "this is bwrapkit's own failure, not the host's; run `bwrapkit doctor -v` and report it with the output"}
	}
	switch code := res.result.ExitCode; code {
	case 0:
	case 126, 127:
		probe := s.cfg.Probe.Command[0]
		return Check{Status: StatusFail,
			Summary: fmt.Sprintf("bwrap built the sandbox, but the self-test probe %s could not be executed inside (exit %d)", probe, code),
			Detail:  strings.TrimSpace(res.stderr),
			Remedy:  "the probe is bwrapkit itself, bound read-only at its own path; run bwrapkit from a regular, executable file (not a deleted or noexec one)"}
	default:
		return Check{Status: StatusFail, Summary: fmt.Sprintf("the probe failed inside the sandbox (exit %d): %s", code, orNothing(lastLine(res.stderr))),
			Detail: strings.TrimSpace(res.stderr)}
	}
	observation, err := decode[launchObservation](res, nil)
	if err != nil {
		return Check{Status: StatusFail, Summary: err.Error()}
	}
	s.mu.Lock()
	s.launch = launchOutcome{result: res.result, observation: observation}
	s.mu.Unlock()
	return Check{Status: StatusOK,
		Summary: fmt.Sprintf("a sandbox was built and ran a command in %v", res.result.Duration.Round(time.Millisecond))}
}

func (s *session) checkLaunchProof(context.Context) Check {
	s.mu.Lock()
	outcome := s.launch
	s.mu.Unlock()
	return launchProofVerdict(outcome.result, outcome.observation, ownNamespaces())
}

func ownNamespaces() map[string]string {
	namespaces := map[string]string{}
	for _, kind := range namespaceKinds {
		if link, err := os.Readlink("/proc/self/ns/" + kind); err == nil {
			namespaces[kind] = link
		}
	}
	return namespaces
}
