package doctor

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// TextOptions shape the text report.
type TextOptions struct {
	Color   bool // ANSI colours: only for a terminal, and never with NO_COLOR set
	Verbose bool // each check's detail too
}

var marks = map[Status]string{StatusOK: "✓", StatusWarn: "!", StatusFail: "✗", StatusSkip: "-"}

var colors = map[Status]string{StatusOK: "\x1b[32m", StatusWarn: "\x1b[33m", StatusFail: "\x1b[31m", StatusSkip: "\x1b[90m"}

const colorReset = "\x1b[0m"

// RenderText writes one line per check, the remedy indented under each warning or failure,
// and a closing count.
func RenderText(w io.Writer, report Report, opts TextOptions) error {
	width := 0
	for _, check := range report.Checks {
		width = max(width, len(check.ID))
	}
	var out strings.Builder
	paint := func(status Status, text string) string {
		if !opts.Color {
			return text
		}
		return colors[status] + text + colorReset
	}
	counts := map[Status]int{}
	for _, check := range report.Checks {
		counts[check.Status]++
		summary := check.Summary
		if check.Status == StatusSkip {
			summary = "skipped: " + summary
		}
		fmt.Fprintf(&out, "%s %-*s  %s\n", paint(check.Status, marks[check.Status]), width, check.ID, summary)
		if opts.Verbose && check.Detail != "" {
			writeIndented(&out, check.Detail, "    | ")
		}
		if check.Remedy != "" && (check.Status == StatusWarn || check.Status == StatusFail) {
			writeIndented(&out, check.Remedy, "    ")
		}
	}
	fmt.Fprintf(&out, "\n%d checks: %d ok, %d %s, %d failed, %d skipped (%v): %s\n",
		len(report.Checks), counts[StatusOK], counts[StatusWarn], plural(counts[StatusWarn], "warning", "warnings"),
		counts[StatusFail], counts[StatusSkip], report.Duration.Round(time.Millisecond), verdictWord(report, paint))
	_, err := io.WriteString(w, out.String())
	return err
}

func writeIndented(out *strings.Builder, text, prefix string) {
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		out.WriteString(strings.TrimRight(prefix+line, " ") + "\n")
	}
}

func verdictWord(report Report, paint func(Status, string) string) string {
	if report.Healthy() {
		return paint(StatusOK, "this host can sandbox")
	}
	return paint(StatusFail, "this host cannot sandbox safely; see the remedies above")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
