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
	ID      string        `json:"id"`
	Status  report.Status `json:"status"`
	Summary string        `json:"summary"`
	Detail  string        `json:"detail"`
	Remedy  string        `json:"remedy"`
	// RemedyCommands is always an array ([] when there is nothing to run), so a consumer
	// need not tell null from empty.
	RemedyCommands []string `json:"remedy_commands"`
	DurationMS     int64    `json:"duration_ms"`
}

// JSON writes the report as one bwrapkit.doctor/v1 document.
func JSON(w io.Writer, r report.Report) error {
	doc := jsonReport{Schema: report.Schema, Status: r.Status, ToolVersion: r.ToolVersion,
		DurationMS: r.Duration.Milliseconds(), Platform: r.Platform, Bwrap: r.Bwrap,
		Checks: make([]jsonCheck, 0, len(r.Checks))}
	for _, check := range r.Checks {
		doc.Checks = append(doc.Checks, jsonCheck{ID: check.ID, Status: check.Status, Summary: check.Summary,
			Detail: check.Detail, Remedy: check.Remedy, RemedyCommands: remedyCommands(check), DurationMS: check.Duration.Milliseconds()})
	}
	encoder := json.NewEncoder(w)
	encoder.SetEscapeHTML(false) // commands hold > and &; they stay readable
	encoder.SetIndent("", "  ")
	return encoder.Encode(doc)
}

// remedyCommands are a warning's or a failure's commands; none for ok and skip.
func remedyCommands(check report.Check) []string {
	if check.Status != report.StatusFail && check.Status != report.StatusWarn || check.RemedyCommands == nil {
		return []string{}
	}
	return check.RemedyCommands
}
