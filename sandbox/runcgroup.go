package sandbox

import (
	"fmt"
	"time"

	"github.com/bwrapkit/bwrapkit/sandbox/cgroup"
	"github.com/bwrapkit/bwrapkit/sandbox/lifetime"
	"github.com/bwrapkit/bwrapkit/sandbox/limits"
)

// cgroupEndBound is how long a run's end waits for its cgroup to empty after
// cgroup.kill: only a process in uninterruptible sleep (a hung NFS read) takes long.
const cgroupEndBound = 10 * time.Second

// RunCgroup says which cgroup held a run (see package cgroup and docs/lifetime.md).
type RunCgroup struct {
	// Mode is cgroup.V2, cgroup.V1 (root on a hybrid host), or cgroup.None: then the
	// keeper and bwrapkit alone held the run, and --limit memory and pids were defaults
	// that bound nothing (an explicit one is refused instead).
	Mode cgroup.Mode `json:"mode"`
	// Why says, for None, what the host lacks; Remedy how to get a cgroup.
	Why    string `json:"why,omitempty"`
	Remedy string `json:"remedy,omitempty"`
	// Left says why the cgroup could not be emptied and removed at the run's end.
	Left string `json:"left,omitempty"`
	// OOMKills is how many of the run's processes the kernel's OOM killer ended because
	// the run reached MemoryBound (bytes): a command killed so exits 137, and this says
	// why. Both are zero when it never happened.
	OOMKills    uint64 `json:"oom_kills,omitempty"`
	MemoryBound uint64 `json:"memory_bound,omitempty"`
	// CPUMicros is the CPU time the run's processes used (bwrap's and the command's), as
	// the kernel counted it in the run's cgroup; zero without one, or where unreadable.
	CPUMicros uint64 `json:"cpu_usec,omitempty"`
}

// runCgroup is one run's cgroup while it runs.
type runCgroup struct {
	host            cgroup.Host
	ended           error
	oomKills, bound uint64
	cpuMicros       uint64
}

// startCgroup makes the run's cgroup for bounds l where the host allows it and names it
// to the run's keeper, if it has one (keeper waits for it), before the cgroup is made
// and before bwrap exists. A nil Group: none (the host's Why says why).
func startCgroup(l limits.Limits, keeper func() (*lifetime.Keeper, error)) (*cgroup.Group, *runCgroup, error) {
	announce := func(paths []string) error {
		kept, err := keeper()
		switch {
		case err != nil:
			return err
		case kept == nil:
			return nil
		}
		if err := kept.WatchCgroup(paths); err != nil {
			return fmt.Errorf("the run's keeper is gone: %w", err)
		}
		return nil
	}
	group, host, err := cgroup.ForRun(l, announce)
	if err != nil {
		return nil, nil, err
	}
	return group, &runCgroup{host: host}, nil
}

func (c *runCgroup) result() RunCgroup {
	out := RunCgroup{Mode: c.host.Mode}
	if c.host.Mode == cgroup.None {
		out.Why, out.Remedy = c.host.Why, c.host.Remedy
	}
	if c.ended != nil {
		out.Left = c.ended.Error()
	}
	if c.oomKills > 0 {
		out.OOMKills, out.MemoryBound = c.oomKills, c.bound
	}
	out.CPUMicros = c.cpuMicros
	return out
}
