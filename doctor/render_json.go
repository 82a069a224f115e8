package doctor

import (
	"encoding/json"
	"io"
)

type jsonReport struct {
	Schema      string       `json:"schema"`
	Status      Status       `json:"status"`
	ToolVersion string       `json:"tool_version"`
	DurationMS  int64        `json:"duration_ms"`
	Platform    PlatformInfo `json:"platform"`
	Bwrap       BwrapInfo    `json:"bwrap"`
	Checks      []jsonCheck  `json:"checks"`
}

type jsonCheck struct {
	ID         string `json:"id"`
	Status     Status `json:"status"`
	Summary    string `json:"summary"`
	Detail     string `json:"detail"`
	Remedy     string `json:"remedy"`
	DurationMS int64  `json:"duration_ms"`
}

// RenderJSON writes the report as one bwrapkit.doctor/v1 document.
func RenderJSON(w io.Writer, report Report) error {
	doc := jsonReport{Schema: Schema, Status: report.Status, ToolVersion: report.ToolVersion,
		DurationMS: report.Duration.Milliseconds(), Platform: report.Platform, Bwrap: report.Bwrap,
		Checks: make([]jsonCheck, 0, len(report.Checks))}
	for _, check := range report.Checks {
		doc.Checks = append(doc.Checks, jsonCheck{ID: check.ID, Status: check.Status, Summary: check.Summary,
			Detail: check.Detail, Remedy: check.Remedy, DurationMS: check.Duration.Milliseconds()})
	}
	encoder := json.NewEncoder(w)
	encoder.SetIndent("", "  ")
	return encoder.Encode(doc)
}
