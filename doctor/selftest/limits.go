package selftest

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/internal/trust"
	"github.com/bwrapkit/bwrapkit/sandbox"
	"github.com/bwrapkit/bwrapkit/sandbox/cgroup"
	"github.com/bwrapkit/bwrapkit/sandbox/limits"
)

// Limits is the self-test of its name; see doctor/README.md for why it can fail and pass.
// The bounds expected are the policy's own, as sandbox/limits applies them: the policy's
// Limits lowered to the caller's hard limits (Within), and its tmpfs size, which the shared
// launch keeps small (SharedTmpfs) so the fill is cheap.
func Limits(env *Env, policy sandbox.Policy, request *probe.Request) (Part, error) {
	inherited, err := limits.Inherited()
	if err != nil {
		return Part{}, err
	}
	bounds := limitsExpectation{
		rlimits: policy.Limits.Within(inherited).Rlimits(),
		tmpfs:   policy.Limits.TmpfsSize(),
		sized:   env.Features.Has("size"),
		root:    trust.Current().ParentRoot,
	}
	if bounds.tmpfs > 0 {
		// A page more than the bound: a tmpfs without one takes it all without an error.
		request.Limits = &probe.LimitsRequest{TmpfsDir: "/tmp", MaxFill: bounds.tmpfs + 64<<10}
	} else {
		request.Limits = &probe.LimitsRequest{}
	}
	return Part{Judge: func(_ context.Context, launched Launched) report.Check {
		if launched.Observation.Limits == nil {
			return missing("resource limits")
		}
		return limitsVerdict(*launched.Observation.Limits, bounds, launched.Result.Cgroup)
	}}, nil
}

type limitsExpectation struct {
	rlimits []limits.Rlimit
	tmpfs   uint64 // 0: no bound asked
	sized   bool   // the bwrap has --size
	root    bool   // the caller is the initial namespace's root, whom RLIMIT_NPROC does not bound
}

// rlimitNames are for the report only; the values come from the policy.
func rlimitName(resource int) string {
	switch resource {
	case unix.RLIMIT_AS:
		return "RLIMIT_AS"
	case unix.RLIMIT_CORE:
		return "RLIMIT_CORE"
	case unix.RLIMIT_FSIZE:
		return "RLIMIT_FSIZE"
	case unix.RLIMIT_NOFILE:
		return "RLIMIT_NOFILE"
	case unix.RLIMIT_NPROC:
		return "RLIMIT_NPROC"
	}
	return fmt.Sprintf("rlimit %d", resource)
}

func limitText(v uint64) string {
	if v == unix.RLIM_INFINITY {
		return "unlimited"
	}
	return fmt.Sprint(v)
}

// nprocRootRemedy: measured in sandbox/limits (a root caller forked past nproc=64 with no
// EAGAIN): the kernel does not apply RLIMIT_NPROC to the root user.
const nprocRootRemedy = "the kernel exempts uid 0 from RLIMIT_NPROC, so a command run as root can fork without bound; " +
	"run bwrapkit as an unprivileged user, where the bound holds, or bound the run's processes with a cgroup's pids.max (a subtree delegated to you)"

// limitsVerdict: every rlimit inside is the policy's (soft = hard), core dumps are off, no
// hard limit could be raised, and a write into a private tmpfs stopped at its bound.
//
// And which mode holds the run's memory, tasks and end: a cgroup of the run's own (v2,
// delegated or root; v1 as root on a hybrid host), or the keeper alone, which bounds no
// memory (memfds, tmpfs inodes) and, for root, no tasks.
func limitsVerdict(observed probe.LimitsObservation, want limitsExpectation, held sandbox.RunCgroup) report.Check {
	var wrong, detail []string
	for _, bound := range want.rlimits {
		name := rlimitName(bound.Resource)
		var got *probe.RlimitObservation
		for i := range observed.Rlimits {
			if observed.Rlimits[i].Resource == bound.Resource {
				got = &observed.Rlimits[i]
			}
		}
		switch {
		case got == nil:
			wrong = append(wrong, name+" was not read")
			continue
		case got.Error != "":
			wrong = append(wrong, name+": getrlimit "+got.Error)
			continue
		}
		detail = append(detail, fmt.Sprintf("%s: %s/%s (the policy: %s); raising it: %s", name, limitText(got.Cur), limitText(got.Max), limitText(bound.Max), orSucceeded(got.Raise)))
		if got.Cur != bound.Cur || got.Max != bound.Max {
			wrong = append(wrong, fmt.Sprintf("%s is %s/%s, the policy sets %s", name, limitText(got.Cur), limitText(got.Max), limitText(bound.Max)))
		}
		if got.Max != unix.RLIM_INFINITY && got.Raise == "" {
			wrong = append(wrong, name+"'s hard limit could be raised inside")
		}
	}
	tmpfsNote := ""
	switch {
	case want.tmpfs == 0:
		detail = append(detail, "tmpfs: no bound asked (tmpfs=unlimited)")
	case !want.sized:
		tmpfsNote = "this bwrap has no --size, so each private tmpfs may take half of RAM"
		detail = append(detail, fmt.Sprintf("tmpfs: %d bytes written into /tmp (%s)", observed.Filled, orSucceeded(observed.FillError)))
	default:
		detail = append(detail, fmt.Sprintf("tmpfs: %d bytes written into /tmp, bound %d: %s", observed.Filled, want.tmpfs, orSucceeded(observed.FillError)))
		switch {
		case observed.FillErrno == "":
			wrong = append(wrong, fmt.Sprintf("/tmp took %d bytes, past its bound of %d", observed.Filled, want.tmpfs))
		case observed.FillErrno != "ENOSPC":
			wrong = append(wrong, fmt.Sprintf("filling /tmp failed with %s, not ENOSPC, after %d bytes", observed.FillErrno, observed.Filled))
		case observed.Filled > want.tmpfs:
			wrong = append(wrong, fmt.Sprintf("/tmp took %d bytes, past its bound of %d", observed.Filled, want.tmpfs))
		}
	}
	detail = append(detail, "cgroup: "+cgroupModeText(held))
	if held.Left != "" {
		wrong = append(wrong, "the run's cgroup was not removed at its end: "+held.Left)
	}
	if held.Mode != cgroup.None && held.Mode != "" {
		// The mode is what bwrapkit meant to do; the kernel's count says the run's
		// processes were in that cgroup at all (a bwrap started outside it, and so the
		// sandbox, would leave it at 0: bounded by nothing, ended by no cgroup.kill).
		detail = append(detail, fmt.Sprintf("the run's cgroup counted %d µs of CPU", held.CPUMicros))
		if held.CPUMicros == 0 {
			wrong = append(wrong, "the run's cgroup counted no CPU time: the sandbox was not in it")
		}
	}
	switch {
	case len(wrong) > 0:
		return breach("the bounds are not in force inside: "+strings.Join(wrong, "; "), strings.Join(detail, "\n"))
	case tmpfsNote != "":
		return report.Check{Status: report.StatusWarn, Summary: "the rlimits are in force, but " + tmpfsNote, Detail: strings.Join(detail, "\n"),
			Remedy: "run `bwrapkit install` for a bwrap with --size (bubblewrap 0.5.0+)"}
	case held.Mode == cgroup.None || held.Mode == "":
		unbounded, remedy := "memory held through memfds and tmpfs inodes is", held.Remedy
		if want.root {
			unbounded, remedy = "memory held through memfds and tmpfs inodes, and a root caller's tasks (RLIMIT_NPROC exempts uid 0), are", remedy+"; and "+nprocRootRemedy
		}
		return report.Check{Status: report.StatusWarn,
			Summary: "the rlimits are in force, but runs get no cgroup of their own here (keeper only): " + unbounded + " not bounded; " + held.Why,
			Detail:  strings.Join(detail, "\n"), Remedy: remedy}
	}
	return pass(fmt.Sprintf("the policy's %d rlimits are in force and cannot be raised (core 0); a private tmpfs stopped at its bound; each run has a cgroup of its own (%s)", len(want.rlimits), cgroupModeText(held)), strings.Join(detail, "\n"))
}

// cgroupModeText names the mode for a reader.
func cgroupModeText(held sandbox.RunCgroup) string {
	switch held.Mode {
	case cgroup.V2:
		return "cgroup v2: memory, pids and cgroup.kill in a subtree bwrapkit may write"
	case cgroup.V1:
		return "cgroup v1 as root: v1 memory and pids, and the v2 hierarchy's cgroup.kill"
	}
	return "keeper only: " + held.Why
}
