// Package selftest is the doctor's live proof of the boundary: each self-test runs the probe
// (package probe) through sandbox.Run, the path every caller uses, and judges what it
// observed inside together with the host's state after. One file per property: its run and
// its verdict, a pure function table-tested in verdict_test.go.
package selftest

import (
	"context"
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// Launched is the launch check's run, which launch-proof judges and timeout-kill scales by.
type Launched struct {
	Result      sandbox.Result
	Observation probe.LaunchObservation
}

// Test is one self-test: its check id, its bound and its function.
type Test struct {
	ID      string
	Timeout time.Duration
	Run     func(ctx context.Context, env *Env, launched Launched) report.Check
}

const (
	timeout     = 20 * time.Second
	killTimeout = 30 * time.Second // three attempts, the longest of 5s, plus teardown
)

// Tests lists the self-tests in report order. A new property is one file here (its probe
// run and its verdict) and one row below. The kernel-surface properties of the boundary
// (read-only /proc/sys, setuid refused, the seccomp filter, the keyring, the limits) come
// as rows of their own once the sandbox sets them up.
func Tests() []Test {
	return []Test{
		{"selftest.launch-proof", timeout, LaunchProof},
		{"selftest.workdir-write", timeout, WorkdirWrite},
		{"selftest.outside-write", timeout, OutsideWrite},
		{"selftest.git-readonly", timeout, GitReadonly},
		{"selftest.env-clear", timeout, EnvClear},
		{"selftest.fd-isolation", timeout, FDIsolation},
		{"selftest.secrets-hidden", timeout, SecretsHidden},
		{"selftest.network", timeout, Network},
		{"selftest.proc-isolation", timeout, ProcIsolation},
		{"selftest.capabilities", timeout, Capabilities},
		{"selftest.timeout-kill", killTimeout, TimeoutKill},
		{"selftest.nested-userns", timeout, NestedUserns},
	}
}
