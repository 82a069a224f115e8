package report

import (
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/provenance"
	"github.com/bwrapkit/bwrapkit/doctor/remedy"
)

// Schema names the JSON report's format.
const Schema = "bwrapkit.doctor/v1"

// Report is one doctor run.
type Report struct {
	Status      Status // ok, warn or fail: the worst check (a skip counts as ok)
	ToolVersion string
	Started     time.Time
	Duration    time.Duration
	Platform    PlatformInfo
	Bwrap       BwrapInfo
	Checks      []Check
}

// PlatformInfo is the host, as the JSON report names it.
type PlatformInfo struct {
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	Kind      string `json:"kind"`
	Kernel    string `json:"kernel"`
	Container string `json:"container"`
}

// BwrapInfo is the bwrap in use; empty fields where it was not found or not probed.
type BwrapInfo struct {
	Path    string `json:"path"`
	Source  string `json:"source"`
	Version string `json:"version"` // X.Y.Z, or "" for a custom build
	Build   string `json:"build"`   // raw --version text
	Setuid  bool   `json:"setuid"`
	Static  bool   `json:"static"`
	// Package is the distribution package that owns the binary; nil when none does or it
	// could not be read (bwrap.version's detail says which).
	Package *provenance.Package `json:"package"`
}

// Healthy: no check failed.
func (r Report) Healthy() bool { return r.Status.Healthy() }

// Fixes lists the automatable remedies of the checks that warn or fail, in check order,
// for `doctor --fix`.
func (r Report) Fixes() []remedy.Fix {
	var fixes []remedy.Fix
	for _, check := range r.Checks {
		if check.Fix != nil && (check.Status == StatusFail || check.Status == StatusWarn) {
			fixes = append(fixes, *check.Fix)
		}
	}
	return fixes
}

// Overall is the worst status among checks.
func Overall(checks []Check) Status {
	status := StatusOK
	for _, check := range checks {
		switch check.Status {
		case StatusFail:
			return StatusFail
		case StatusWarn:
			status = StatusWarn
		}
	}
	return status
}
