package render

import (
	"encoding/json"
	"io"

	"github.com/bwrapkit/bwrapkit/doctor/report"
)

type jsonReport struct {
	Schema      string              `json:"schema"`
	Status      report.Status       `json:"status"`
	ToolVersion string              `json:"tool_version"`
	DurationMS  int64               `json:"duration_ms"`
	Platform    report.PlatformInfo `json:"platform"`
	Bwrap       report.BwrapInfo    `json:"bwrap"`
	Checks      []jsonCheck         `json:"checks"`
}

type jsonCheck struct {
	ID         string        `json:"id"`
	Status     report.Status `json:"status"`
	Summary    string        `json:"summary"`
	Detail     string        `json:"detail"`
	Remedy     string        `json:"remedy"`
	DurationMS int64         `json:"duration_ms"`
}

// JSON writes the report as one bwrapkit.doctor/v1 document.
func JSON(w io.Writer, r report.Report) error {
	doc := jsonReport{Schema: report.Schema, Status: r.Status, ToolVersion: r.ToolVersion,
		DurationMS: r.Duration.Milliseconds(), Platform: r.Platform, Bwrap: r.Bwrap,
		Checks: make([]jsonCheck, 0, len(r.Checks))}
	for _, check := range r.Checks {
		doc.Checks = append(doc.Checks, jsonCheck{ID: check.ID, Status: check.Status, Summary: check.Summary,
			Detail: check.Detail, Remedy: check.Remedy, DurationMS: check.Duration.Milliseconds()})
	}
	encoder := json.NewEncoder(w)
	encoder.SetIndent("", "  ")
	return encoder.Encode(doc)
}
