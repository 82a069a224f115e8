package cgroup

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/bwrapkit/bwrapkit/sandbox/limits"
)

// NeededError is a run whose --limit memory or pids cannot hold, because the host gives
// it no cgroup: such a run is refused, never run with the bound silently dropped.
type NeededError struct {
	Bounds []string // the explicit bounds, "memory=1G"
	Host   Host
}

func (e *NeededError) Error() string {
	return fmt.Sprintf("--limit %s needs a cgroup of the run's own, and this host gives none: %s; %s",
		strings.Join(e.Bounds, ", --limit "), e.Host.Why, e.Host.Remedy)
}

// ForRun makes one run's cgroup where the host allows it, bounded by l. Where it does
// not, it returns a nil Group and the host (its Why says what is missing), unless the
// user set a memory or pids bound, which then cannot hold: a *NeededError. announce (nil
// for none) is told the directories before any exists: the keeper, which announce may
// start (it is called once this process is where the run's processes are to be born).
func ForRun(l limits.Limits, announce func(paths []string) error) (*Group, Host, error) {
	host := Detect()
	if host.Mode == None {
		return nil, host, needed(host, l)
	}
	// The host looked able and was not (a read-only cgroupfs, a cgroup at its
	// max.descendants): a run the user asked no cgroup bound of runs without one, and
	// says so; one that asked is refused.
	unmade := func(err error) (*Group, Host, error) {
		failed := Host{Mode: None, Why: "making the run's cgroup failed: " + err.Error(), Remedy: remedyUser}
		return nil, failed, needed(failed, l)
	}
	if host.leaf != "" {
		// Below a delegated v2 cgroup bwrapkit moves into a leaf of its own first, so
		// that a keeper started from here on is born there too: a process left in the
		// delegated cgroup would keep it from giving the runs' cgroups their controllers.
		if err := host.enterLeaf(); err != nil {
			return unmade(err)
		}
		host.leaf = ""
	}
	host.Sweep()
	var raw [12]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, host, err
	}
	token := hex.EncodeToString(raw[:])
	if announce != nil {
		if err := announce(host.Paths(token)); err != nil {
			return nil, host, err
		}
	}
	group, err := host.Create(token, RunBounds(l, memTotal()))
	if err != nil {
		return unmade(err)
	}
	return group, host, nil
}

// needed refuses, on a host without cgroups, the bounds only a cgroup holds that the
// user asked for; the defaults then bound nothing, and the run says so. An explicit
// "unlimited" asks for nothing a cgroup must hold.
func needed(host Host, l limits.Limits) error {
	if host.Mode != None {
		return nil
	}
	var explicit []string
	for _, name := range []limits.Name{limits.Memory, limits.Pids} {
		if v, _ := l.Value(name); l.Explicit(name) && v != limits.Unlimited {
			explicit = append(explicit, string(name)+"="+limits.Format(name, v))
		}
	}
	if len(explicit) > 0 {
		return &NeededError{Bounds: explicit, Host: host}
	}
	return nil
}

// RunBounds is what a run's cgroup is held to: the user's bounds as given, and the
// defaults, with the memory default lowered to half of the host's RAM (memTotal bytes;
// 0 when unknown) so that a run never takes the whole host by default.
func RunBounds(l limits.Limits, memTotal uint64) Bounds {
	memory, _ := l.Value(limits.Memory)
	pids, _ := l.Value(limits.Pids)
	if !l.Explicit(limits.Memory) && memTotal > 0 && memory > memTotal/2 {
		memory = memTotal / 2
	}
	return Bounds{Memory: memory, Pids: pids}
}

// Unbounded reports whether the user set both memory and pids to unlimited: a run without
// a cgroup then lacks nothing they asked for (the CLI says nothing of it; the report
// still names the mode).
func Unbounded(l limits.Limits) bool {
	memory, _ := l.Value(limits.Memory)
	pids, _ := l.Value(limits.Pids)
	return l.Explicit(limits.Memory) && l.Explicit(limits.Pids) && memory == limits.Unlimited && pids == limits.Unlimited
}

// memTotal is /proc/meminfo's MemTotal in bytes, 0 when unreadable.
func memTotal() uint64 {
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return parseMemTotal(string(meminfo))
}

func parseMemTotal(meminfo string) uint64 {
	for line := range strings.SplitSeq(meminfo, "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			fields := strings.Fields(rest)
			if len(fields) == 2 && fields[1] == "kB" {
				if kb, err := strconv.ParseUint(fields[0], 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}

// insideOOMScore is the oom_score_adj the sandbox's processes get: when the run reaches
// its memory bound the kernel's OOM killer picks a victim in the run's cgroup by this
// score first, and memfd and tmpfs pages count in no process's size. Without it, it
// picked bwrap itself (outside the sandbox's pid namespace, the largest by RSS after the
// bridge), and the run read as a bwrap that never reported its child (125) instead of a
// command killed (137). Raising a score needs no privilege; lowering one would.
const insideOOMScore = "500"

// PreferInside makes the sandbox's pid 1 (bwrap's child, before it starts the command,
// which inherits the score with every process after it) the OOM killer's choice over
// bwrap. Best effort: where it cannot be written (a setuid bwrap's child), the memory
// bound holds all the same.
func PreferInside(pid int) {
	_ = os.WriteFile("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", []byte(insideOOMScore), 0)
}
