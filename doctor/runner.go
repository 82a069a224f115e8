package doctor

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/report"
)

// Spec is a check to run: its id, the checks it needs, its bound and its function. Run
// returns the verdict; the runner fills in ID and Duration.
type Spec struct {
	ID      string
	Needs   []string
	Timeout time.Duration // 0: defaultCheckTimeout
	Run     func(ctx context.Context) report.Check
}

const (
	defaultCheckTimeout = 15 * time.Second
	// abandonGrace is how long a check whose context expired may take to return on its own
	// (and say what it was doing) before the runner gives up on it.
	abandonGrace = 500 * time.Millisecond
)

// runAll runs specs concurrently, at most parallel at a time, each after the checks it needs.
// A check whose need did not pass is skipped with the reason; one that hangs or panics
// becomes a failure. The results come back in the order of specs, whatever order they ran in.
func runAll(ctx context.Context, specs []Spec, parallel int) []report.Check {
	if parallel < 1 {
		parallel = 1
	}
	results := make([]report.Check, len(specs))
	// failedRoot[i] names the failed check that made check i skip, through any chain of skips.
	failedRoot := make([]string, len(specs))
	done := make(map[string]chan struct{}, len(specs))
	index := make(map[string]int, len(specs))
	for i, spec := range specs {
		done[spec.ID] = make(chan struct{})
		index[spec.ID] = i
	}
	slots := make(chan struct{}, parallel)
	for i, spec := range specs {
		go func() {
			// Closing done publishes results[i] to the checks that wait on it.
			defer close(done[spec.ID])
			if reason, root := unmetNeed(spec, done, index, results, failedRoot); reason != "" {
				results[i] = report.Check{ID: spec.ID, Status: report.StatusSkip, Summary: reason}
				failedRoot[i] = root
				return
			}
			slots <- struct{}{}
			defer func() { <-slots }()
			results[i] = runOne(ctx, spec)
		}()
	}
	for _, spec := range specs {
		<-done[spec.ID]
	}
	return results
}

// unmetNeed waits for spec's needs and names the first that did not pass, and the failed
// check at the root of it, so a skip says what to fix rather than only what was skipped.
func unmetNeed(spec Spec, done map[string]chan struct{}, index map[string]int, results []report.Check, failedRoot []string) (reason, root string) {
	for _, need := range spec.Needs {
		finished, ok := done[need]
		if !ok {
			return fmt.Sprintf("needs %s, which was not run", need), ""
		}
		<-finished
		switch i := index[need]; {
		case results[i].Status == report.StatusFail:
			return fmt.Sprintf("needs %s, which failed", need), need
		case results[i].Status == report.StatusSkip && failedRoot[i] != "":
			return fmt.Sprintf("needs %s, which was skipped because %s failed", need, failedRoot[i]), failedRoot[i]
		case results[i].Status == report.StatusSkip:
			return fmt.Sprintf("needs %s, which was skipped", need), ""
		}
	}
	return "", ""
}

// runOne runs one check within its bound. The check's function gets a context that expires
// at the bound; if it does not return soon after, it is abandoned (its goroutine finishes
// into a buffered channel nobody reads) so one stuck check never takes the doctor down.
func runOne(ctx context.Context, spec Spec) report.Check {
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = defaultCheckTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	began := time.Now()
	finished := make(chan report.Check, 1)
	go func() {
		defer func() {
			if recovered := recover(); recovered != nil {
				finished <- report.Check{Status: report.StatusFail,
					Summary: fmt.Sprintf("the check itself crashed: %v", recovered),
					Detail:  strings.TrimSpace(string(debug.Stack())),
					Remedy:  "this is a bug in bwrapkit; please report it with the detail above (doctor -v)"}
			}
		}()
		finished <- spec.Run(ctx)
	}()

	var check report.Check
	select {
	case check = <-finished:
	case <-ctx.Done():
		select {
		case check = <-finished:
		case <-time.After(abandonGrace):
			check = abandoned(ctx, timeout)
		}
	}
	check.ID = spec.ID
	if check.Duration == 0 {
		// A check that ran beside another (a self-test started with the launch) says how
		// long its own work took; the rest took as long as their run here.
		check.Duration = time.Since(began)
	}
	if check.Status == "" {
		check.Status, check.Summary = report.StatusFail, "the check returned no verdict: "+check.Summary
	}
	return check
}

func abandoned(ctx context.Context, timeout time.Duration) report.Check {
	if ctx.Err() == context.DeadlineExceeded {
		return report.Check{Status: report.StatusFail,
			Summary: fmt.Sprintf("did not finish within %v and was abandoned", timeout),
			Remedy:  "something on this host hangs (bwrap, the file system, /proc); run again with -v and compare"}
	}
	return report.Check{Status: report.StatusFail, Summary: "interrupted: " + context.Cause(ctx).Error()}
}
