// Package report is the doctor's vocabulary: a check's status and verdict, and the report
// of one run, which the runner fills, the renderers print and `doctor --fix` plans from.
package report

import (
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/remedy"
)

// Status is a check's verdict.
type Status string

const (
	StatusOK   Status = "ok"
	StatusWarn Status = "warn"
	StatusFail Status = "fail"
	// StatusSkip: the check did not run, because a check it needs did not pass or because
	// it does not apply here; Summary says which.
	StatusSkip Status = "skip"
)

// Check is the result of one check.
type Check struct {
	ID      string
	Status  Status
	Summary string // one line
	Detail  string // the facts behind the verdict; shown with -v
	Remedy  string // what to do, with exact commands; set for warn and fail
	// RemedyCommands are the remedy's commands for this host, one shell command each, as a
	// user pastes them (sudo included where needed); nil when there is nothing to run.
	RemedyCommands []string
	Duration       time.Duration
	// Fix is what `doctor --fix` could automate for this check; nil when nothing can.
	Fix *remedy.Fix
}

// Healthy reports whether a status keeps the doctor's verdict healthy.
func (s Status) Healthy() bool { return s != StatusFail }
