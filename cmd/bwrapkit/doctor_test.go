package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/sandbox/cgroup"
)

func TestDoctorBadUsageExitsTwo(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown format", []string{"doctor", "--format", "yaml"}, `unknown --format "yaml"`},
		{"unknown check", []string{"doctor", "--check", "launch", "--check", "bwrap.nope"}, `unknown check "bwrap.nope"`},
		{"json contradicts format", []string{"doctor", "--json", "--format", "text"}, "contradict"},
		{"extra argument", []string{"doctor", "now"}, "unexpected argument"},
		{"unknown flag", []string{"doctor", "--colour"}, "unknown flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := invocation{args: tc.args}.run(t)
			if got.status != exitUsage || !strings.Contains(got.stderr, tc.want) || got.stdout != "" {
				t.Errorf("status %d, stdout %q, stderr %q; want 2 and %q", got.status, got.stdout, got.stderr, tc.want)
			}
		})
	}
}

func TestDoctorFlagsParse(t *testing.T) {
	cmd := newDoctorCmd(streams{}, &globalOptions{})
	if err := cmd.ParseFlags([]string{"--json", "-v", "--check", "launch", "--check", "userns", "--output", "r.json"}); err != nil {
		t.Fatal(err)
	}
	checks, _ := cmd.Flags().GetStringArray("check")
	verbose, _ := cmd.Flags().GetBool("verbose")
	output, _ := cmd.Flags().GetString("output")
	json, _ := cmd.Flags().GetBool("json")
	if strings.Join(checks, ",") != "launch,userns" || !verbose || output != "r.json" || !json {
		t.Errorf("checks %v verbose %v output %q json %v", checks, verbose, output, json)
	}
	if cmd.Flags().Lookup("fix") == nil {
		t.Error("--fix is not registered")
	}
}

// The built binary, as users and cron jobs run it; its probe is its own hidden subcommand.

func runBuilt(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(builtBinary, args...)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	status := 0
	if exit, ok := err.(*exec.ExitError); ok {
		status = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return status, stdout.String(), stderr.String()
}

func doctorEnv(t *testing.T) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + livetest.TempDir(t), "NO_COLOR=1"}
}

func TestE2EDoctorHealthy(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	status, stdout, stderr := runBuilt(t, doctorEnv(t), "doctor", "--json")
	var doc struct {
		Schema string
		Status string
		Bwrap  struct{ Path string }
		Checks []struct{ ID, Status, Summary string }
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout, stderr)
	}
	if status != 0 || doc.Schema != "bwrapkit.doctor/v1" || doc.Status == "fail" || doc.Bwrap.Path == "" {
		t.Fatalf("status %d, doc %+v\n%s", status, doc, stderr)
	}
	real, _ := filepath.EvalSymlinks(bwrap)
	if doc.Bwrap.Path != real {
		t.Errorf("bwrap %s, want %s", doc.Bwrap.Path, real)
	}
	for _, check := range doc.Checks {
		if strings.HasPrefix(check.ID, "selftest.") && check.Status != "ok" && !(check.Status == "warn" && warnsByDesign(check.ID)) {
			t.Errorf("%s: %s %s", check.ID, check.Status, check.Summary)
		}
	}

	status, stdout, _ = runBuilt(t, doctorEnv(t), "doctor")
	if status != 0 || !strings.Contains(stdout, "✓ selftest.timeout-kill") || strings.Contains(stdout, "\x1b[") {
		t.Errorf("text: status %d\n%s", status, stdout)
	}
}

func TestE2EDoctorPrometheusOutputFile(t *testing.T) {
	livetest.SystemBwrap(t)
	file := filepath.Join(t.TempDir(), "bwrapkit.prom")
	status, stdout, stderr := runBuilt(t, doctorEnv(t), "doctor", "--format", "prometheus", "--output", file, "--check", "bwrap.features")
	data, err := os.ReadFile(file)
	if status != 0 || stdout != "" || err != nil {
		t.Fatalf("status %d, stdout %q, stderr %q, %v", status, stdout, stderr, err)
	}
	for _, want := range []string{"bwrapkit_doctor_healthy 1\n", `bwrapkit_doctor_check_ok{check="bwrap.features"} 1`, "bwrapkit_bwrap_info{path="} {
		if !strings.Contains(string(data), want) {
			t.Errorf("lacks %q:\n%s", want, data)
		}
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(file), ".*tmp*")); len(leftovers) > 0 {
		t.Errorf("temp files left: %v", leftovers)
	}
}

func TestE2EDoctorFailures(t *testing.T) {
	livetest.SystemBwrap(t)
	t.Run("no bwrap anywhere", func(t *testing.T) {
		env := append(doctorEnv(t), "PATH="+t.TempDir(), "BWRAPKIT_HOME="+t.TempDir())
		status, stdout, _ := runBuilt(t, env, "doctor")
		if status != 1 || !strings.Contains(stdout, "✗ bwrap.found") || !strings.Contains(stdout, "bwrapkit install") {
			t.Errorf("status %d\n%s", status, stdout)
		}
	})
	t.Run("/bin/true as bwrap", func(t *testing.T) {
		status, stdout, _ := runBuilt(t, doctorEnv(t), "doctor", "--bwrap", "/bin/true")
		if status != 1 || !strings.Contains(stdout, "✗ bwrap.features") {
			t.Errorf("status %d\n%s", status, stdout)
		}
	})
	t.Run("inside a sandbox without user namespaces", func(t *testing.T) {
		outer := livetest.SystemBwrap(t)
		dir := livetest.TempDir(t)
		cmd := exec.Command(outer, "--unshare-user", "--disable-userns", "--ro-bind", "/", "/", "--proc", "/proc",
			"--dev", "/dev", "--bind", dir, dir, "--", builtBinary, "doctor")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir}
		out, err := cmd.Output()
		exit, ok := err.(*exec.ExitError)
		if !ok || exit.ExitCode() != 1 {
			t.Fatalf("%v\n%s", err, out)
		}
		text := string(out)
		if !strings.Contains(text, "✗ launch") || !strings.Contains(text, "user namespace") || !strings.Contains(text, "outside the enclosing sandbox") {
			t.Errorf("the refusal is not explained:\n%s", text)
		}
	})
}

// warnsByDesign are the checks a healthy host may see warn: bwrap.version on a bwrap older
// than 0.12.0, and selftest.limits where runs get no cgroup (keeper only: a user on a
// hybrid host, with no delegation).
func warnsByDesign(id string) bool {
	// selftest.workdir-vetting warns where only the direct mode can be built (Debian's
	// bwrap 0.8.0 has no --overlay), with `bwrapkit install` as its remedy.
	return id == "bwrap.version" || id == "selftest.limits" && cgroup.Detect().Mode == cgroup.None || id == "selftest.workdir-vetting"
}
