package selftest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/internal/capped"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// CanaryVar is set in the environment the doctor builds every sandbox policy from, and
// must never be seen inside: env-clear proves it.
const CanaryVar = "BWRAPKIT_DOCTOR_CANARY"

// Env is what the self-tests run through: the bwrap in use with its probed features, the
// probe, the caller's environment (as `bwrapkit run` builds its policy from it) and the
// scene on the host.
type Env struct {
	Bwrap    string
	Features sandbox.Features
	Probe    probe.Command
	// Keeper is the executable every self-test's run starts as its keeper
	// (sandbox.Options.Keeper): a doctor killed mid-run then leaves no sandbox behind. ""
	// runs them unkept, as the Go API's default.
	Keeper string
	// Prober is the doctor's (sandbox.Options.Prober), which has probed this bwrap once
	// already; nil probes afresh in each run.
	Prober  *sandbox.Prober
	Environ []string
	Scene   *Scene
	// Homes are where secrets-hidden plants its secrets: the caller's real home, and /root
	// when the caller is root. One that does not exist is left alone, never created.
	Homes []string
	// Shared is the launch the planned self-tests share; nil runs "launch" bare.
	Shared *Shared
	// Joint is the run net-allow and workdir-vetting share; nil runs each alone.
	Joint *Joint
	// LaunchBound is how long bwrap may take to report the sandboxed child before the launch
	// is tried once more with twice the bound; zero is DefaultLaunchBound.
	LaunchBound time.Duration
}

// ProbeRun is one run of the probe through sandbox.Run, the path every caller uses.
type ProbeRun struct {
	Name     string
	Args     []string
	Network  bool
	Timeout  time.Duration    // the sandbox's --timeout; 0: none
	NetProxy sandbox.NetProxy // the proxy the run reaches the network through; zero: none
	// judged: the descriptors the sandbox inherits are judged (the shared launch's), and
	// arm makes the planted ones inheritable before each try (see probe.Launching).
	judged bool
	arm    func()
}

// ProbeResult is what came back: the Result, the probe's stdout and bwrap's stderr.
type ProbeResult struct {
	Result sandbox.Result
	Stdout []byte
	Stderr string
}

// DefaultLaunchBound is how long bwrap may take to report the sandboxed child; a launch that
// exceeds it is tried once more with twice the bound before the doctor reports it: on a host
// loaded far past its cores (a fleet's busy builder) a healthy launch can take that long
// once, and a failure the doctor reports must be one it reproduced.
const DefaultLaunchBound = 10 * time.Second

// SharedTmpfs is the bound of every private tmpfs in the shared launch: small, so the
// limits self-test can fill one to its bound in a moment.
const SharedTmpfs = 256 << 10

// Run runs the probe in a sandbox over the scene's workdir. The "launch" probe, when the
// self-tests share it, carries every planned part: they are planned first, and cleaned up
// after. An error is either an *sandbox.UnavailableError (the sandbox was not built) or a
// problem of the doctor's own.
func (e *Env) Run(ctx context.Context, run ProbeRun) (ProbeResult, error) {
	if run.Name != "launch" || e.Shared == nil || len(run.Args) > 0 {
		policy, err := e.Policy(run.Network, nil)
		if err != nil {
			return ProbeResult{}, err
		}
		return e.run(ctx, policy, run)
	}
	policy, err := e.Policy(false, []string{fmt.Sprintf("tmpfs=%dK", SharedTmpfs>>10)})
	if err != nil {
		return ProbeResult{}, err
	}
	// The launch carries fd-isolation: its canary is made inheritable (armed) right before
	// each try, under the lock no other launch of this process holds meanwhile (see
	// probe.Launching), and stays open to the launch's end.
	request, parts := e.Shared.plan(e, policy)
	defer e.Shared.done(parts)
	data, err := json.Marshal(request)
	if err != nil {
		return ProbeResult{}, err
	}
	arm := func() {
		for _, part := range parts {
			if part.Arm != nil {
				part.Arm()
			}
		}
	}
	return e.run(ctx, policy, ProbeRun{Name: "launch", Args: []string{string(data)}, judged: true, arm: arm})
}

// Policy is the sandbox policy of a self-test's run, built from the caller's environment
// as `bwrapkit run` builds it, with the canary added.
func (e *Env) Policy(network bool, bounds []string) (sandbox.Policy, error) {
	command := e.Probe.Argv
	if len(command) == 0 || !filepath.IsAbs(command[0]) {
		return sandbox.Policy{}, errors.New("no self-test probe configured (an absolute path to bwrapkit)")
	}
	environ := append(append([]string{}, e.Environ...), CanaryVar+"="+e.Scene.token)
	policy, err := sandbox.NewPolicy(sandbox.Request{
		Workdir:  e.Scene.workdir,
		ReadOnly: []string{command[0]},
		Network:  network,
		Env:      e.Probe.Env,
		Limits:   bounds,
		// The self-tests watch the workdir from the host while the probe runs (the
		// timeout-kill marker): they prove the live-bind boundary; the transactional
		// workdir has a self-test of its own (workdir-vetting).
		WorkdirMode: string(sandbox.WorkdirDirect),
	}, environ)
	if err != nil {
		return sandbox.Policy{}, err
	}
	policy.Features = e.Features
	return policy, nil
}

// policyFor is a self-test's policy over a scratch project of its own, in mode.
func (e *Env) policyFor(workdir string, mode sandbox.WorkdirMode) (sandbox.Policy, error) {
	command := e.Probe.Argv
	if len(command) == 0 || !filepath.IsAbs(command[0]) {
		return sandbox.Policy{}, errors.New("no self-test probe configured (an absolute path to bwrapkit)")
	}
	policy, err := sandbox.NewPolicy(sandbox.Request{Workdir: workdir, ReadOnly: []string{command[0]}, Env: e.Probe.Env, WorkdirMode: string(mode)}, e.Environ)
	if err != nil {
		return sandbox.Policy{}, err
	}
	policy.Features = e.Features
	return policy, nil
}

func (e *Env) run(ctx context.Context, policy sandbox.Policy, run ProbeRun) (ProbeResult, error) {
	bound := e.LaunchBound
	if bound <= 0 {
		bound = DefaultLaunchBound
	}
	res, err := e.runOnce(ctx, policy, run, bound)
	var unavailable *sandbox.UnavailableError
	if errors.As(err, &unavailable) && unavailable.Reason == sandbox.ReasonLaunchTimeout && ctx.Err() == nil {
		// Nothing ran (no child-pid, so the command never started): trying again changes
		// nothing on the host.
		res, err = e.runOnce(ctx, policy, run, 2*bound)
	}
	return res, err
}

func (e *Env) runOnce(ctx context.Context, policy sandbox.Policy, run ProbeRun, bound time.Duration) (ProbeResult, error) {
	// A probe's report is small; a runaway one must not fill the doctor's memory.
	stdout, stderr := capped.NewHead(nil), capped.NewHead(nil)
	argv := append(append(append([]string{}, e.Probe.Argv...), run.Name), run.Args...)
	var result sandbox.Result
	var err error
	probe.Launching(run.judged, func(started func()) {
		if err = ctx.Err(); err != nil {
			return // given up while another launch held the lock: nothing starts
		}
		if run.arm != nil {
			run.arm()
		}
		result, err = sandbox.Run(ctx, policy, argv, sandbox.Options{
			Bwrap:         e.Bwrap,
			Stdout:        stdout,
			Stderr:        stderr,
			Timeout:       run.Timeout,
			LaunchTimeout: bound,
			NetProxy:      run.NetProxy,
			Keeper:        e.Keeper,
			Prober:        e.Prober,
			BwrapStarted:  started,
		})
	})
	return ProbeResult{Result: result, Stdout: stdout.Bytes(), Stderr: stderr.String()}, err
}

// Decode reads the probe's JSON observation, or says why the run cannot be judged.
func Decode[T any](res ProbeResult, err error) (T, error) {
	var observation T
	if err != nil {
		return observation, err
	}
	if res.Result.ExitCode != 0 {
		return observation, fmt.Errorf("the probe exited %d: %s", res.Result.ExitCode, OrNothing(LastLine(res.Stderr)))
	}
	if err := json.Unmarshal(res.Stdout, &observation); err != nil {
		return observation, fmt.Errorf("the probe's report is unreadable (%v): %q", err, truncate(string(res.Stdout), 200))
	}
	return observation, nil
}

// OrNothing stands in for an empty stderr line.
func OrNothing(s string) string {
	if s == "" {
		return "(nothing on stderr)"
	}
	return s
}

// LastLine is the last non-empty line of text, trimmed.
func LastLine(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Failed is a check that could not be judged: the sandbox or the doctor itself failed.
func Failed(summary string, err error) report.Check {
	var unavailable *sandbox.UnavailableError
	if errors.As(err, &unavailable) {
		return report.Check{Status: report.StatusFail, Summary: summary + ": the sandbox was not built",
			Detail: unavailable.Error(), Remedy: "see the launch check"}
	}
	return report.Check{Status: report.StatusFail, Summary: summary + ": " + strings.TrimSpace(err.Error())}
}
