// Package selftest is the doctor's live proof of the boundary: each self-test runs the probe
// (package probe) through sandbox.Run, the path every caller uses, and judges what it
// observed inside together with the host's state after. One file per property: its part of
// the run and its verdict, a pure function table-tested in verdict_test.go.
//
// Most self-tests share one run, the launch check's: each plans its part of the probe's
// request (and its scene on the host) before it, and judges its part of the one
// observation after it. A probe start and a sandbox cost more than all the observations
// together, so one run proves every property one run can.
package selftest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// Launched is the launch check's run, the one the shared self-tests judge.
type Launched struct {
	Result      sandbox.Result
	Observation probe.LaunchObservation
}

// Test is one self-test: its check id, its bound, and either its part of the shared launch
// (Plan) or a run of its own (Run).
type Test struct {
	ID      string
	Timeout time.Duration
	// Plan adds what the property needs observed to the shared launch's request and sets
	// up its host side, before the launch. policy is the launch's.
	Plan func(env *Env, policy sandbox.Policy, request *probe.Request) (Part, error)
	// Run is a self-test with runs of its own (timeout-kill), or one that judges the
	// launch's result alone (launch-proof).
	Run func(ctx context.Context, env *Env, launched Launched) report.Check
	// Beside: Run needs nothing of the launch (it gets a zero Launched), so the doctor
	// starts it beside the launch's run rather than after it, and reports it after.
	Beside bool
}

// Part is one self-test's share of the shared launch.
type Part struct {
	// Judge decides from the launch's observation and what the host shows after it.
	Judge func(ctx context.Context, launched Launched) report.Check
	// Cleanup undoes the host side (planted secrets, a listener, a descriptor) right
	// after the launch, whatever it did. May be nil.
	Cleanup func()
	// Arm makes what the part planted inheritable, right before each try of the launch,
	// while no other launch of this process can start (see probe.Launching). May be nil.
	Arm func()
}

// The bounds of a self-test: a hang's, not a healthy run's (milliseconds). They leave room
// for one launch tried again (DefaultLaunchBound, then twice that) on a heavily loaded host.
const (
	timeout     = 45 * time.Second
	killTimeout = 60 * time.Second // attempts of up to 5s each, plus teardown
)

// Tests lists the self-tests in report order. A new property is one file here (its part
// and its verdict) and one row below.
func Tests() []Test {
	return []Test{
		{ID: "selftest.launch-proof", Timeout: timeout, Run: LaunchProof},
		{ID: "selftest.workdir-write", Timeout: timeout, Plan: WorkdirWrite},
		{ID: "selftest.outside-write", Timeout: timeout, Plan: OutsideWrite},
		{ID: "selftest.git-readonly", Timeout: timeout, Plan: GitReadonly},
		{ID: "selftest.env-clear", Timeout: timeout, Plan: EnvClear},
		{ID: "selftest.fd-isolation", Timeout: timeout, Plan: FDIsolation},
		{ID: "selftest.secrets-hidden", Timeout: timeout, Plan: SecretsHidden},
		{ID: "selftest.network", Timeout: timeout, Plan: Network},
		{ID: "selftest.net-allow", Timeout: timeout, Run: NetAllow, Beside: true},
		{ID: "selftest.proc-isolation", Timeout: timeout, Plan: ProcIsolation},
		{ID: "selftest.proc-sys-readonly", Timeout: timeout, Plan: ProcSysReadonly},
		{ID: "selftest.capabilities", Timeout: timeout, Plan: Capabilities},
		{ID: "selftest.setuid-refused", Timeout: timeout, Plan: SetuidRefused},
		{ID: "selftest.seccomp", Timeout: timeout, Plan: Seccomp},
		{ID: "selftest.keyring", Timeout: timeout, Plan: Keyring},
		{ID: "selftest.limits", Timeout: timeout, Plan: Limits},
		{ID: "selftest.timeout-kill", Timeout: killTimeout, Run: TimeoutKill, Beside: true},
		{ID: "selftest.nested-userns", Timeout: timeout, Plan: NestedUserns},
		{ID: "selftest.workdir-vetting", Timeout: timeout, Run: WorkdirVetting, Beside: true},
	}
}

// Shared is the launch the planned self-tests share: the tests selected for this doctor,
// and, once the launch ran, each one's part (or why it could not be planned).
type Shared struct {
	tests []Test

	mu       sync.Mutex
	ran      bool
	parts    map[string]Part
	planErrs map[string]error
}

// NewShared is the shared launch of the given self-tests (the ones a doctor selected).
func NewShared(tests []Test) *Shared {
	return &Shared{tests: tests, parts: map[string]Part{}, planErrs: map[string]error{}}
}

// Judge is the verdict of test's part of the shared launch.
func (s *Shared) Judge(ctx context.Context, id string, launched Launched) report.Check {
	s.mu.Lock()
	ran := s.ran
	part, planned := s.parts[id]
	planErr := s.planErrs[id]
	s.mu.Unlock()
	switch {
	case planErr != nil:
		return Failed("its part of the launch could not be prepared", planErr)
	case !ran || !planned:
		return Failed("its part of the launch", fmt.Errorf("the launch did not carry it"))
	}
	return part.Judge(ctx, launched)
}

// plan collects every test's part of the launch's request.
func (s *Shared) plan(env *Env, policy sandbox.Policy) (probe.Request, map[string]Part) {
	var request probe.Request
	parts := map[string]Part{}
	for _, test := range s.tests {
		if test.Plan == nil {
			continue
		}
		part, err := test.Plan(env, policy, &request)
		s.mu.Lock()
		if err != nil {
			s.planErrs[test.ID] = err
		} else {
			parts[test.ID] = part
		}
		s.mu.Unlock()
	}
	return request, parts
}

func (s *Shared) done(parts map[string]Part) {
	for _, part := range parts {
		if part.Cleanup != nil {
			part.Cleanup()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ran = true
	for id, part := range parts {
		s.parts[id] = part
	}
}

// missing is the verdict when the probe reported nothing for a part it was asked for.
func missing(what string) report.Check {
	return report.Check{Status: report.StatusFail, Summary: "the probe reported no " + what + " (an older or broken probe)"}
}
