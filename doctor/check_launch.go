package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/diagnose"
	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/doctor/selftest"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// checkLaunch builds a sandbox through sandbox.Run and runs the probe in it, with the
// self-tests that need nothing of it beside; when that fails it says why, from the host's
// facts first and bwrap's stderr second, and ends those: their checks are skipped.
func (s *session) checkLaunch(ctx context.Context) report.Check {
	check := s.launch(ctx)
	if check.Status != report.StatusOK && s.stopBeside != nil {
		s.stopBeside()
	}
	return check
}

func (s *session) launch(ctx context.Context) report.Check {
	env, err := s.selftestEnv()
	var res selftest.ProbeResult
	if err == nil {
		s.startBeside(env)
		res, err = env.Run(ctx, selftest.ProbeRun{Name: "launch"})
	}
	var unavailable *sandbox.UnavailableError
	if errors.As(err, &unavailable) {
		facts := s.facts()
		facts.Reason, facts.Missing, facts.Stderr, facts.Err = unavailable.Reason, unavailable.Missing, unavailable.Stderr, unavailable
		diagnosis := diagnose.Diagnose(facts)
		detail := append([]string{"sandbox.Run: " + string(unavailable.Reason)}, diagnosis.Evidence...)
		return report.Check{Status: report.StatusFail, Summary: "no sandbox: " + diagnosis.Summary,
			Detail: strings.Join(detail, "\n"), Remedy: diagnosis.Remedy, Fix: diagnosis.Fix, RemedyCommands: diagnosis.RemedyCommands()}
	}
	var dirErr *selftest.DirError
	switch {
	case errors.As(err, &dirErr):
		// Where no directory can be made (a read-only outer sandbox, say), the host may
		// still explain why no sandbox could be built at all: that is the news to give.
		facts := s.facts()
		if _, knobBlocks := facts.Host.UserNamespacesBlocked(); (knobBlocks || facts.UsernsErr != 0) && !facts.Setuid {
			diagnosis := diagnose.Diagnose(facts)
			detail := append(diagnosis.Evidence, "the launch itself was not tried, for want of a writable place for its files: "+dirErr.Err.Error())
			return report.Check{Status: report.StatusFail, Summary: "no sandbox: " + diagnosis.Summary,
				Detail: strings.Join(detail, "\n"), Remedy: diagnosis.Remedy, Fix: diagnosis.Fix, RemedyCommands: diagnosis.RemedyCommands()}
		}
		return report.Check{Status: report.StatusFail, Summary: "the launch could not be tried: " + err.Error(),
			Remedy: "the self-tests make their directory under ~/.cache/bwrapkit/selftest ($XDG_CACHE_HOME), else in $TMPDIR, /var/tmp or /tmp: " +
				"make one of them writable (and not full), e.g. TMPDIR=/var/tmp bwrapkit doctor"}
	case err != nil && ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded):
		// The check's own bound passed mid-run: bwrap reported its child (else the launch
		// bound would have said so), and the probe did not finish.
		return report.Check{Status: report.StatusFail, Summary: fmt.Sprintf("the launch did not finish within %v: the sandbox was built, and the probe inside hung or the host is too loaded to finish it", launchCheckTimeout),
			Remedy: "run the doctor again on a quieter host; if it hangs again, see whether `bwrapkit run -- true` finishes, and report `bwrapkit doctor -v` with the output"}
	case err != nil:
		return report.Check{Status: report.StatusFail, Summary: "the launch could not be tried: " + err.Error(),
			Remedy: "this is bwrapkit's own failure, not the host's; run `bwrapkit doctor -v` and report it with the output"}
	}
	switch code := res.Result.ExitCode; code {
	case 0:
	case 126, 127:
		prober := s.cfg.Probe.Argv[0]
		return report.Check{Status: report.StatusFail,
			Summary: fmt.Sprintf("bwrap built the sandbox, but the self-test probe %s could not be executed inside (exit %d)", prober, code),
			Detail:  strings.TrimSpace(res.Stderr),
			Remedy:  "the probe is bwrapkit-helper beside bwrapkit, else bwrapkit itself, bound read-only at its own path; run bwrapkit from a regular, executable file (not a deleted or noexec one), with its helper beside it or none"}
	default:
		return report.Check{Status: report.StatusFail, Summary: fmt.Sprintf("the probe failed inside the sandbox (exit %d): %s", code, selftest.OrNothing(selftest.LastLine(res.Stderr))),
			Detail: strings.TrimSpace(res.Stderr)}
	}
	observation, err := selftest.Decode[probe.LaunchObservation](res, nil)
	if err != nil {
		return report.Check{Status: report.StatusFail, Summary: err.Error()}
	}
	s.mu.Lock()
	s.launched = selftest.Launched{Result: res.Result, Observation: observation}
	s.mu.Unlock()
	check := report.Check{Status: report.StatusOK,
		Summary: fmt.Sprintf("a sandbox was built and ran a command in %v", res.Result.Duration.Round(time.Millisecond)),
		Detail:  env.Scene.Where() + "\nthe probe: " + s.cfg.Probe.Argv[0]}
	if s.cfg.HelperNote != "" {
		check.Status = report.StatusWarn
		check.Summary += ", with bwrapkit itself as the probe and keeper: bwrapkit-helper beside it is not of this build: " + s.cfg.HelperNote
		check.Remedy = "runs start bwrapkit-helper as their keeper and network bridge: replace it with the one of this bwrapkit's build (make build and the release put both side by side), or remove it (bwrapkit is then its own helper)"
	}
	return check
}
