package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/bwrapkit/bwrapkit/doctor/report"
)

// Prometheus writes the text exposition format for node_exporter's textfile
// collector: HELP and TYPE for every metric, gauges only, no timestamps on samples (the
// collector refuses them), and the run's time as its own metric.
func Prometheus(w io.Writer, r report.Report) error {
	var out strings.Builder
	metric := func(name, help string) {
		fmt.Fprintf(&out, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
	}
	metric("bwrapkit_doctor_healthy", "1 when no doctor check failed, else 0.")
	fmt.Fprintf(&out, "bwrapkit_doctor_healthy %d\n", boolValue(r.Healthy()))

	metric("bwrapkit_doctor_check_ok", "1 when the check passed (ok or warn); 0 when it failed or was skipped.")
	for _, check := range r.Checks {
		passed := check.Status == report.StatusOK || check.Status == report.StatusWarn
		fmt.Fprintf(&out, "bwrapkit_doctor_check_ok{check=\"%s\"} %d\n", labelValue(check.ID), boolValue(passed))
	}
	metric("bwrapkit_doctor_checks", "Number of checks per status in the last run.")
	for _, status := range []report.Status{report.StatusOK, report.StatusWarn, report.StatusFail, report.StatusSkip} {
		count := 0
		for _, check := range r.Checks {
			if check.Status == status {
				count++
			}
		}
		fmt.Fprintf(&out, "bwrapkit_doctor_checks{status=\"%s\"} %d\n", status, count)
	}
	metric("bwrapkit_doctor_check_duration_seconds", "How long each check took in the last run.")
	for _, check := range r.Checks {
		fmt.Fprintf(&out, "bwrapkit_doctor_check_duration_seconds{check=\"%s\"} %s\n", labelValue(check.ID), seconds(check.Duration.Seconds()))
	}
	metric("bwrapkit_doctor_duration_seconds", "How long the last doctor run took.")
	fmt.Fprintf(&out, "bwrapkit_doctor_duration_seconds %s\n", seconds(r.Duration.Seconds()))
	metric("bwrapkit_doctor_last_run_timestamp_seconds", "Unix time at which the last doctor run finished.")
	finished := r.Started.Add(r.Duration)
	fmt.Fprintf(&out, "bwrapkit_doctor_last_run_timestamp_seconds %s\n", seconds(float64(finished.UnixMilli())/1000))
	metric("bwrapkit_bwrap_info", "The bwrap in use; always 1, the facts are in the labels.")
	if r.Bwrap.Path != "" {
		fmt.Fprintf(&out, "bwrapkit_bwrap_info{path=\"%s\",version=\"%s\",source=\"%s\",build=\"%s\"} 1\n",
			labelValue(r.Bwrap.Path), labelValue(r.Bwrap.Version), labelValue(r.Bwrap.Source), labelValue(r.Bwrap.Build))
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// labelValue escapes a label value as the exposition format requires: backslash, double
// quote and line feed.
func labelValue(value string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(value)
}

func seconds(value float64) string { return strconv.FormatFloat(value, 'f', -1, 64) }

func boolValue(b bool) int {
	if b {
		return 1
	}
	return 0
}
