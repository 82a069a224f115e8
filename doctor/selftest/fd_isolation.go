package selftest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
	"golang.org/x/sys/unix"
)

// FDIsolation is the self-test of its name; see doctor/README.md for why it can fail and pass.
func FDIsolation(env *Env, _ sandbox.Policy, request *probe.Request) (Part, error) {
	fixture := env.Scene
	// Opened close-on-exec, and armed (the flag cleared) right before each try of the
	// launch, as a descriptor bwrapkit inherited from its caller would be: sandbox.Run must
	// mark every descriptor above stderr close-on-exec before bwrap starts. Armed, not
	// opened so: until the launch holds the lock (probe.Launching) another launch of this
	// process may mark it, and would hide a sandbox.Run that does not. (A child the doctor
	// starts outside sandbox.Run, such as the bwrap probes, may inherit it once armed:
	// that child is on the host's side of the boundary anyway.)
	canary, err := openCanary(fixture.fdCanary)
	if err != nil {
		return Part{}, fmt.Errorf("the canary descriptor could not be opened: %w", err)
	}
	request.FDs = true
	var armErr error
	return Part{
		Arm:     func() { _, armErr = unix.FcntlInt(uintptr(canary), unix.F_SETFD, 0) },
		Cleanup: func() { unix.Close(canary) },
		Judge: func(_ context.Context, launched Launched) report.Check {
			if armErr != nil {
				return Failed("the canary descriptor could not be made inheritable", armErr)
			}
			if launched.Observation.FDs == nil {
				return missing("descriptor listing")
			}
			return fdIsolationVerdict(*launched.Observation.FDs, filepath.Base(fixture.fdCanary))
		},
	}, nil
}

// canaryFloor is the lowest descriptor the canary takes. os/exec puts bwrap's own
// descriptors (the status and filter pipes, the bound files: Options' ExtraFiles) at 3 and
// up, over whatever the parent had there, so a canary at 5 was replaced in bwrap by one of
// them and stayed outside whether sandbox.Run marked it or not. A run's are far fewer.
const canaryFloor = 100

// openCanary opens path close-on-exec at canaryFloor or above: below the descriptor limit
// when that is lower (a limit under 100 is a host's own odd choice; the canary then sits
// as high as it allows).
func openCanary(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(fd)
	floor := canaryFloor
	var limit unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &limit) == nil && limit.Cur <= canaryFloor {
		floor = max(int(limit.Cur)-1, 0)
	}
	return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, floor)
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
