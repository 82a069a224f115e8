package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bwrapkit/bwrapkit/sandbox"
)

// canaryVar is set in the environment the doctor builds every sandbox policy from, and
// must never be seen inside: env-clear proves it.
const canaryVar = "BWRAPKIT_DOCTOR_CANARY"

// probeRun is one run of the probe through sandbox.Run, the path every caller uses.
type probeRun struct {
	name    string
	args    []string
	network bool
	timeout time.Duration // the sandbox's --timeout; 0: none
}

// probeResult is what came back: the Result, the probe's stdout and bwrap's stderr.
type probeResult struct {
	result sandbox.Result
	stdout []byte
	stderr string
}

// launchBound is how long bwrap may take to report the sandboxed child.
const launchBound = 10 * time.Second

// fixtureError is a self-test directory the doctor could not make: the host's temp
// directory, not the sandbox, is at fault.
type fixtureError struct{ err error }

func (e *fixtureError) Error() string { return "preparing the self-test directory: " + e.err.Error() }
func (e *fixtureError) Unwrap() error { return e.err }

// runProbe runs the probe in a sandbox over the fixture's workdir. An error is either an
// *UnavailableError (the sandbox was not built) or a problem of the doctor's own.
func (s *session) runProbe(ctx context.Context, run probeRun) (probeResult, error) {
	made := s.fixture.get()
	if made.err != nil {
		return probeResult{}, &fixtureError{made.err}
	}
	fixture := made.fixture
	features, err := s.features(ctx)
	if err != nil {
		return probeResult{}, err
	}
	probe := s.cfg.Probe
	if len(probe.Command) == 0 || !filepath.IsAbs(probe.Command[0]) {
		return probeResult{}, errors.New("no self-test probe configured (an absolute path to bwrapkit)")
	}
	environ := append(append([]string{}, s.cfg.Environ...), canaryVar+"="+fixture.token)
	policy, err := sandbox.NewPolicy(sandbox.Request{
		Workdir:  fixture.workdir,
		ReadOnly: []string{probe.Command[0]},
		Network:  run.network,
		Env:      probe.Env,
	}, environ)
	if err != nil {
		return probeResult{}, err
	}
	policy.Features = features
	var stdout, stderr limitedBuffer
	command := append(append(append([]string{}, probe.Command...), run.name), run.args...)
	result, err := sandbox.Run(ctx, policy, command, sandbox.Options{
		Bwrap:         s.bwrapPath(),
		Stdout:        &stdout,
		Stderr:        &stderr,
		Timeout:       run.timeout,
		LaunchTimeout: launchBound,
	})
	return probeResult{result: result, stdout: stdout.Bytes(), stderr: stderr.String()}, err
}

// decode reads the probe's JSON observation, or says why the run cannot be judged.
func decode[T any](res probeResult, err error) (T, error) {
	var observation T
	if err != nil {
		return observation, err
	}
	if res.result.ExitCode != 0 {
		return observation, fmt.Errorf("the probe exited %d: %s", res.result.ExitCode, orNothing(lastLine(res.stderr)))
	}
	if err := json.Unmarshal(res.stdout, &observation); err != nil {
		return observation, fmt.Errorf("the probe's report is unreadable (%v): %q", err, truncate(string(res.stdout), 200))
	}
	return observation, nil
}

// limitedBuffer keeps the first 64 KiB: a probe's report is small, and a runaway one must
// not fill the doctor's memory.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

const limitedBufferSize = 64 << 10

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := limitedBufferSize - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

func (b *limitedBuffer) String() string { return string(b.Bytes()) }

func orNothing(s string) string {
	if s == "" {
		return "(nothing on stderr)"
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// failed is a check that could not be judged: the sandbox or the doctor itself failed.
func failed(summary string, err error) Check {
	var unavailable *sandbox.UnavailableError
	if errors.As(err, &unavailable) {
		return Check{Status: StatusFail, Summary: summary + ": the sandbox was not built",
			Detail: unavailable.Error(), Remedy: "see the launch check"}
	}
	return Check{Status: StatusFail, Summary: summary + ": " + strings.TrimSpace(err.Error())}
}
