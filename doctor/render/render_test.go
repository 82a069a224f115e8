package render

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

func sampleReport() report.Report {
	return report.Report{
		Status: report.StatusFail, ToolVersion: "1.2.3",
		Started:  time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		Duration: 212 * time.Millisecond,
		Platform: report.PlatformInfo{OS: "linux", Arch: "amd64", Kind: "linux", Kernel: "6.1.0-18-amd64"},
		Bwrap:    report.BwrapInfo{Path: `/opt/we"ird\bwrap`, Source: "flag", Version: "", Build: "bubblewrap built for Codex"},
		Checks: []report.Check{
			{ID: "platform", Status: report.StatusOK, Summary: "linux/amd64", Detail: "kind: linux", Duration: 3 * time.Millisecond},
			{ID: "bwrap.version", Status: report.StatusWarn, Summary: "version unknown", Remedy: "run `bwrapkit install`", Duration: time.Millisecond},
			{ID: "launch", Status: report.StatusFail, Summary: "no sandbox: limit", Remedy: "raise it:\nsysctl -w user.max_user_namespaces=15000", Duration: 40 * time.Millisecond,
				RemedyCommands: []string{"sysctl -w user.max_user_namespaces=15000"}},
			{ID: "selftest.network", Status: report.StatusSkip, Summary: "needs launch, which failed"},
		},
	}
}

func TestText(t *testing.T) {
	var out bytes.Buffer
	if err := Text(&out, sampleReport(), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"✓ platform          linux/amd64\n" +
		"! bwrap.version     version unknown\n" +
		"    run `bwrapkit install`\n" +
		"✗ launch            no sandbox: limit\n" +
		"    raise it:\n" +
		"    sysctl -w user.max_user_namespaces=15000\n" +
		"- selftest.network  skipped: needs launch, which failed\n" +
		"\n" +
		"To fix what failed, paste:\n" +
		"\n" +
		"sh -eux <<'EOF'\n" +
		"sysctl -w user.max_user_namespaces=15000\n" +
		"EOF\n" +
		"\n" +
		"4 checks: 1 ok, 1 warning, 1 failed, 1 skipped (212ms): this host cannot sandbox safely; see the remedies above\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	if strings.Contains(out.String(), "\x1b[") {
		t.Error("colour without a terminal")
	}

	out.Reset()
	_ = Text(&out, sampleReport(), TextOptions{Color: true, Verbose: true})
	for _, want := range []string{"\x1b[32m✓\x1b[0m platform", "\x1b[31m✗\x1b[0m launch", "    | kind: linux\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("colour/verbose output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestJSON(t *testing.T) {
	var out bytes.Buffer
	if err := JSON(&out, sampleReport()); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	// The key sets are the contract (bwrapkit.doctor/v1, docs/doctor.md).
	want := map[string][]string{
		"":         {"bwrap", "checks", "duration_ms", "platform", "schema", "status", "tool_version"},
		"platform": {"arch", "container", "kernel", "kind", "os"},
		"bwrap":    {"build", "package", "path", "setuid", "source", "static", "version"},
		"check":    {"detail", "duration_ms", "id", "remedy", "remedy_commands", "status", "summary"},
	}
	checks := doc["checks"].([]any)
	for name, object := range map[string]map[string]any{
		"": doc, "platform": doc["platform"].(map[string]any), "bwrap": doc["bwrap"].(map[string]any), "check": checks[0].(map[string]any),
	} {
		var keys []string
		for key := range object {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		if !reflect.DeepEqual(keys, want[name]) {
			t.Errorf("%q keys %v, want %v", name, keys, want[name])
		}
	}
	if doc["schema"] != "bwrapkit.doctor/v1" || doc["status"] != "fail" || doc["duration_ms"] != 212.0 {
		t.Errorf("header: %v %v %v", doc["schema"], doc["status"], doc["duration_ms"])
	}
	if launch := checks[2].(map[string]any); launch["duration_ms"] != 40.0 || launch["status"] != "fail" ||
		!reflect.DeepEqual(launch["remedy_commands"], []any{"sysctl -w user.max_user_namespaces=15000"}) {
		t.Errorf("launch: %v", launch)
	}
	if ok := checks[0].(map[string]any); !reflect.DeepEqual(ok["remedy_commands"], []any{}) {
		t.Errorf("an ok check's remedy_commands: %#v", ok["remedy_commands"])
	}
	if doc["bwrap"].(map[string]any)["package"] != nil {
		t.Errorf("package of an unowned bwrap: %v", doc["bwrap"].(map[string]any)["package"])
	}

	out.Reset()
	_ = JSON(&out, report.Report{Status: report.StatusOK})
	if !strings.Contains(out.String(), `"checks": []`) {
		t.Errorf("no checks must be [], not null:\n%s", out.String())
	}
}

func TestPrometheus(t *testing.T) {
	var out bytes.Buffer
	if err := Prometheus(&out, sampleReport()); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"# TYPE bwrapkit_doctor_healthy gauge\nbwrapkit_doctor_healthy 0\n",
		`bwrapkit_doctor_check_ok{check="platform"} 1`,
		`bwrapkit_doctor_check_ok{check="bwrap.version"} 1`,
		`bwrapkit_doctor_check_ok{check="launch"} 0`,
		`bwrapkit_doctor_check_ok{check="selftest.network"} 0`,
		`bwrapkit_doctor_checks{status="skip"} 1`,
		`bwrapkit_doctor_check_duration_seconds{check="launch"} 0.04`,
		"bwrapkit_doctor_last_run_timestamp_seconds 1772366400.212\n",
		`bwrapkit_bwrap_info{path="/opt/we\"ird\\bwrap",version="",source="flag",build="bubblewrap built for Codex"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if strings.HasPrefix(line, "# HELP ") || strings.HasPrefix(line, "# TYPE ") {
			continue
		}
		if !strings.HasPrefix(line, "bwrapkit_") {
			t.Errorf("stray line %q", line)
		}
	}
	if labelValue("a\nb") != `a\nb` {
		t.Error("a line feed in a label value is not escaped")
	}
}

// TestRenderPrometheusPromtool lets Prometheus's own linter judge the output.
func TestRenderPrometheusPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		livetest.Skip(t, "promtool is not installed (apt-get install prometheus)")
	}
	for name, report := range map[string]report.Report{"failing": sampleReport(), "no bwrap": {Status: report.StatusFail, Checks: sampleReport().Checks[:1]}} {
		var out bytes.Buffer
		_ = Prometheus(&out, report)
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = &out
		if output, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: promtool check metrics: %v\n%s", name, err, output)
		}
	}
}
