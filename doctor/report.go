package doctor

import "time"

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
}

// Healthy: no check failed.
func (r Report) Healthy() bool { return r.Status.healthy() }

// Fixes lists the automatable remedies of the checks that warn or fail, in check order,
// for `doctor --fix`.
func (r Report) Fixes() []Fix {
	var fixes []Fix
	for _, check := range r.Checks {
		if check.Fix != nil && (check.Status == StatusFail || check.Status == StatusWarn) {
			fixes = append(fixes, *check.Fix)
		}
	}
	return fixes
}

// overall is the worst status among checks.
func overall(checks []Check) Status {
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

// report reads only facts that are already computed: a fact whose check hung stays empty.
func (s *session) report(checks []Check, began, finished time.Time) Report {
	report := Report{Status: overall(checks), ToolVersion: s.cfg.ToolVersion, Started: began,
		Duration: finished.Sub(began), Checks: checks}
	report.Platform = PlatformInfo{OS: s.cfg.GOOS, Arch: s.cfg.GOARCH}
	if host, ok := s.host.peek(); ok {
		report.Platform.Kind, report.Platform.Kernel, report.Platform.Container = host.Kind, host.Kernel, host.Container
	}
	if found, ok := s.located.peek(); ok && found.err == nil {
		report.Bwrap.Path, report.Bwrap.Source = found.result.Path, string(found.result.Source)
	}
	if binary, ok := s.binary.peek(); ok && binary.Err == nil {
		report.Bwrap.Setuid, report.Bwrap.Static = binary.Setuid, binary.Static
	}
	s.mu.Lock()
	report.Bwrap.Build = s.probed.Build
	s.mu.Unlock()
	if version, ok := ParseVersion(report.Bwrap.Build); ok {
		report.Bwrap.Version = version.String()
	}
	return report
}
