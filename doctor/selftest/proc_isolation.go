package selftest

import (
	"context"
	"fmt"
	"strings"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// ProcIsolation is the self-test of its name; see doctor/README.md for why it can fail and pass.
func ProcIsolation(_ *Env, _ sandbox.Policy, request *probe.Request) (Part, error) {
	request.Procs = true
	return Part{Judge: func(_ context.Context, launched Launched) report.Check {
		if launched.Observation.Procs == nil {
			return missing("process listing")
		}
		return procIsolationVerdict(*launched.Observation.Procs)
	}}, nil
}

// procIsolationVerdict: /proc shows the probe and its ancestors (bwrap's init) only.
func procIsolationVerdict(procs probe.ProcObservation) report.Check {
	parent := map[int]int{}
	var listed []string
	for _, process := range procs.Processes {
		parent[process.PID] = process.PPID
		listed = append(listed, fmt.Sprintf("%d %s", process.PID, process.Comm))
	}
	ancestors := map[int]bool{}
	for pid, hops := procs.Self, 0; pid > 0 && hops < 64; pid, hops = parent[pid], hops+1 {
		ancestors[pid] = true
	}
	var foreign []string
	for _, process := range procs.Processes {
		if !ancestors[process.PID] {
			foreign = append(foreign, fmt.Sprintf("%d (%s)", process.PID, process.Comm))
		}
	}
	detail := "visible: " + strings.Join(listed, ", ")
	switch {
	case len(foreign) > 0:
		return breach("processes outside the sandbox are visible in its /proc: "+strings.Join(foreign, ", "), detail)
	case !ancestors[procs.Self] || len(procs.Processes) == 0:
		return breach("the probe could not find itself in /proc", detail)
	}
	return pass(fmt.Sprintf("/proc lists only the sandbox's own %d processes", len(procs.Processes)), detail)
}
