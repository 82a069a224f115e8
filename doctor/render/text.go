package render

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/remedy"
	"github.com/bwrapkit/bwrapkit/doctor/report"
)

// TextOptions shape the text report.
type TextOptions struct {
	Color   bool // ANSI colours: only for a terminal, and never with NO_COLOR set
	Verbose bool // each check's detail too
}

var marks = map[report.Status]string{report.StatusOK: "✓", report.StatusWarn: "!", report.StatusFail: "✗", report.StatusSkip: "-"}

var colors = map[report.Status]string{report.StatusOK: "\x1b[32m", report.StatusWarn: "\x1b[33m", report.StatusFail: "\x1b[31m", report.StatusSkip: "\x1b[90m"}

const colorReset = "\x1b[0m"

// Text writes one line per check, the remedy indented under each warning or failure,
// and a closing count.
func Text(w io.Writer, r report.Report, opts TextOptions) error {
	width := 0
	for _, check := range r.Checks {
		width = max(width, len(check.ID))
	}
	var out strings.Builder
	paint := func(status report.Status, text string) string {
		if !opts.Color {
			return text
		}
		return colors[status] + text + colorReset
	}
	counts := map[report.Status]int{}
	for _, check := range r.Checks {
		counts[check.Status]++
		summary := check.Summary
		if check.Status == report.StatusSkip {
			summary = "skipped: " + summary
		}
		fmt.Fprintf(&out, "%s %-*s  %s\n", paint(check.Status, marks[check.Status]), width, check.ID, summary)
		if opts.Verbose && check.Detail != "" {
			writeIndented(&out, check.Detail, "    | ")
		}
		if check.Remedy != "" && (check.Status == report.StatusWarn || check.Status == report.StatusFail) {
			writeIndented(&out, check.Remedy, "    ")
		}
	}
	if script := failureScript(r); script != "" {
		out.WriteString("\nTo fix what failed, paste:\n\n" + script)
	}
	fmt.Fprintf(&out, "\n%d checks: %d ok, %d %s, %d failed, %d skipped (%v): %s\n",
		len(r.Checks), counts[report.StatusOK], counts[report.StatusWarn], plural(counts[report.StatusWarn], "warning", "warnings"),
		counts[report.StatusFail], counts[report.StatusSkip], r.Duration.Round(time.Millisecond), verdictWord(r, paint))
	_, err := io.WriteString(w, out.String())
	return err
}

func writeIndented(out *strings.Builder, text, prefix string) {
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		out.WriteString(strings.TrimRight(prefix+line, " ") + "\n")
	}
}

func verdictWord(r report.Report, paint func(report.Status, string) string) string {
	if r.Healthy() {
		return paint(report.StatusOK, "this host can sandbox")
	}
	return paint(report.StatusFail, "this host cannot sandbox safely; see the remedies above")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// failureScript is the commands of every failing check as one block to paste (remedy.Script).
func failureScript(r report.Report) string {
	var commands []string
	for _, check := range r.Checks {
		if check.Status == report.StatusFail {
			commands = append(commands, check.RemedyCommands...)
		}
	}
	if len(commands) == 0 {
		return ""
	}
	return remedy.Script(commands)
}
