package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/remedy"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/locate"
	"github.com/bwrapkit/bwrapkit/sandbox/cgroup"
)

// Live tests: the real bwrap, the real kernel, never mocked.

func TestDoctorHealthy(t *testing.T) {
	system := systemBwrap(t)
	for _, bwrap := range []struct{ name, path string }{
		{"system", system},
		{"static-0.12.0", ""},
		{"codex", ""},
	} {
		t.Run(bwrap.name, func(t *testing.T) {
			t.Parallel()
			path := bwrap.path
			if path == "" {
				path = cachedBwrap(t, map[string]string{"static-0.12.0": "bwrap-0.12.0", "codex": "bwrap-codex"}[bwrap.name])
			}
			cfg := liveConfig(t, path)
			got, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Checks) != len(IDs()) {
				t.Fatalf("got %d checks, want %d", len(got.Checks), len(IDs()))
			}
			for _, check := range got.Checks {
				// An old or custom version warns by design, and so do the limits where runs
				// get no cgroup (keeper only); everything else must pass.
				allowed := check.Status == report.StatusOK || check.Status == report.StatusWarn &&
					(check.ID == "bwrap.version" || check.ID == "selftest.limits" && cgroup.Detect().Mode == cgroup.None ||
						// Debian's bwrap has no --overlay: only the direct workdir mode, said as a warning.
						check.ID == "selftest.workdir-vetting" && bwrap.name == "system")
				if !allowed {
					t.Errorf("%s: %s: %s\n%s", check.ID, check.Status, check.Summary, check.Detail)
				}
			}
			if !got.Healthy() || got.Bwrap.Path != path {
				t.Errorf("report: status %s, bwrap %+v", got.Status, got.Bwrap)
			}
			leftovers, _ := filepath.Glob(filepath.Join(cfg.TempDir, "bwrapkit-doctor-*"))
			if len(leftovers) > 0 {
				t.Errorf("the self-tests left %v behind", leftovers)
			}
		})
	}
}

func TestDoctorReportsBwrapIdentity(t *testing.T) {
	for _, tc := range []struct {
		file, version, build string
		static               bool
	}{
		{"bwrap-0.12.0", "0.12.0", "bubblewrap 0.12.0", true},
		{"bwrap-codex", "", "bubblewrap built for Codex", true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := cachedBwrap(t, tc.file)
			cfg := liveConfig(t, path)
			cfg.Checks = []string{"bwrap.permissions", "bwrap.version"}
			got, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := report.BwrapInfo{Path: path, Source: "flag", Version: tc.version, Build: tc.build, Static: tc.static}
			if got.Bwrap != want {
				t.Errorf("bwrap = %+v, want %+v", got.Bwrap, want)
			}
		})
	}
}

// TestDoctorRefusedInsideSandbox runs a whole doctor (this test binary as helper) inside an
// outer bwrap that disables user namespaces: the real refusal, as the kernel makes it.
func TestDoctorRefusedInsideSandbox(t *testing.T) {
	outer := systemBwrap(t)
	executable, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(outer, "--unshare-user", "--disable-userns", "--ro-bind", "/", "/",
		"--proc", "/proc", "--dev", "/dev", "--bind", dir, dir, "--", executable)
	cmd.Env = []string{helperVar + "=doctor", "PATH=" + os.Getenv("PATH"), "TMPDIR=" + dir, "BWRAPKIT_HOME=" + dir}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("doctor inside the sandbox: %v (want exit 1)\n%s\n%s", err, stdout.String(), stderr.String())
	}
	var doc struct {
		Status string
		Checks []struct{ ID, Status, Summary, Remedy string }
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	named := false
	for _, check := range doc.Checks {
		if check.Status == "fail" && strings.Contains(check.Summary, "user namespace") && check.Remedy != "" {
			named = true
		}
		if check.ID == "launch" && check.Status != "fail" {
			t.Errorf("launch: %s, want fail", check.Status)
		}
		if strings.HasPrefix(check.ID, "selftest.") && check.Status != "skip" {
			t.Errorf("%s: %s, want skip", check.ID, check.Status)
		}
	}
	if doc.Status != "fail" || !named {
		t.Errorf("no failing check names user namespaces with a remedy:\n%s", stdout.String())
	}
}

func TestDoctorWithoutBwrap(t *testing.T) {
	systemBwrap(t)
	cfg := liveConfig(t, "")
	cfg.Query = locate.Query{PATH: t.TempDir(), Home: t.TempDir()}
	got, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	found := checkByID(t, got, "bwrap.found")
	if got.Healthy() || found.Status != report.StatusFail || !strings.Contains(found.Remedy, "bwrapkit install") {
		t.Fatalf("want a failing bwrap.found naming `bwrapkit install`:\n%s", dump(got))
	}
	if found.Fix == nil || found.Fix.Kind != remedy.Install {
		t.Errorf("fix = %+v, want install", found.Fix)
	}
	if strings.Join(found.RemedyCommands, "\n") != "bwrapkit install" {
		t.Errorf("remedy commands = %q, want the install", found.RemedyCommands)
	}
	if launch := checkByID(t, got, "launch"); launch.Status != report.StatusSkip || !strings.Contains(launch.Summary, "bwrap.found failed") {
		t.Errorf("launch: %s %q", launch.Status, launch.Summary)
	}
}

func TestDoctorImpostorBwrap(t *testing.T) {
	systemBwrap(t)
	for _, impostor := range []string{"/bin/true", "/bin/false"} {
		t.Run(impostor, func(t *testing.T) {
			got, err := Run(context.Background(), liveConfig(t, impostor))
			if err != nil {
				t.Fatal(err)
			}
			if got.Healthy() {
				t.Fatalf("healthy with %s as bwrap:\n%s", impostor, dump(got))
			}
			failing := false
			for _, check := range got.Checks {
				if check.Status == report.StatusFail && strings.Contains(check.Remedy, "bwrapkit install") {
					failing = true
				}
			}
			if !failing {
				t.Errorf("no failing check names `bwrapkit install`:\n%s", dump(got))
			}
		})
	}
}

func TestDoctorCheckSelection(t *testing.T) {
	cfg := liveConfig(t, systemBwrap(t))
	cfg.Checks = []string{"selftest.env-clear"}
	got, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, check := range got.Checks {
		ran = append(ran, check.ID)
	}
	want := "platform bwrap.found bwrap.version bwrap.features launch selftest.env-clear"
	if strings.Join(ran, " ") != want {
		t.Errorf("ran %v, want %s", ran, want)
	}
	cfg.Checks = []string{"selftest.nope"}
	if _, err := Run(context.Background(), cfg); err == nil {
		t.Error("an unknown check id was accepted")
	}
}

// TestLiveUnwritableTempDirIsNamed: when the self-tests cannot make their directory, the
// launch check says so and how to fix it, instead of blaming the sandbox.
func TestLiveUnwritableTempDirIsNamed(t *testing.T) {
	cfg := liveConfig(t, systemBwrap(t))
	cfg.TempDir = filepath.Join(t.TempDir(), "no", "such", "dir")
	got, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	launch := checkByID(t, got, "launch")
	if launch.Status != report.StatusFail || !strings.Contains(launch.Summary, "self-test directory") || !strings.Contains(launch.Remedy, "TMPDIR") {
		t.Errorf("launch = %+v", launch)
	}
	if got.Healthy() {
		t.Errorf("a doctor that could not test the boundary reports healthy:\n%s", dump(got))
	}
}

// TestJointRun: net-allow and workdir-vetting pass alone and together (one run carries
// both where the transactional workdir can be built: selftest.Joint), on a bwrap with
// --overlay; on Debian's, vetting warns with no run and net-allow passes alone.
func TestJointRun(t *testing.T) {
	system := systemBwrap(t)
	static := cachedBwrap(t, "bwrap-0.12.0")
	for _, tc := range []struct {
		name, bwrap string
		checks      []string
		vetting     report.Status
	}{
		{"static, both", static, []string{"selftest.net-allow", "selftest.workdir-vetting"}, report.StatusOK},
		{"static, net-allow alone", static, []string{"selftest.net-allow"}, ""},
		{"static, vetting alone", static, []string{"selftest.workdir-vetting"}, report.StatusOK},
		{"system, both", system, []string{"selftest.net-allow", "selftest.workdir-vetting"}, report.StatusWarn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := liveConfig(t, tc.bwrap)
			cfg.Checks = tc.checks
			got, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]report.Status{}
			for _, check := range got.Checks {
				seen[check.ID] = check.Status
				if check.ID == "selftest.net-allow" && check.Status != report.StatusOK || check.ID == "selftest.workdir-vetting" && check.Status != tc.vetting {
					t.Errorf("%s: %s: %s\n%s", check.ID, check.Status, check.Summary, check.Detail)
				}
			}
			for _, id := range tc.checks {
				if _, ok := seen[id]; !ok {
					t.Errorf("%s was not reported: %v", id, seen)
				}
			}
			if _, ran := seen["selftest.workdir-vetting"]; ran != (tc.vetting != "") {
				t.Errorf("workdir-vetting reported %v, selected %v", ran, tc.vetting != "")
			}
		})
	}
}

// Doctors running at once in one process (an embedding service, or these tests) each hold
// an fd-isolation canary open without close-on-exec; one doctor's canary must never be what
// another's shared launch inherits between its close-on-exec sweep and its fork.
func TestConcurrentDoctorsKeepTheirCanariesApart(t *testing.T) {
	path := cachedBwrap(t, "bwrap-0.12.0")
	const doctors, rounds = 6, 6
	for round := 0; round < rounds; round++ {
		errs := make(chan string, doctors)
		for i := 0; i < doctors; i++ {
			cfg := liveConfig(t, path)
			cfg.Checks = []string{"selftest.fd-isolation"}
			go func() {
				got, err := Run(context.Background(), cfg)
				if err != nil {
					errs <- err.Error()
					return
				}
				for _, check := range got.Checks {
					if check.ID == "selftest.fd-isolation" && check.Status == report.StatusOK {
						errs <- ""
						return
					}
				}
				errs <- "fd-isolation did not pass:\n" + dump(got)
			}()
		}
		for i := 0; i < doctors; i++ {
			if msg := <-errs; msg != "" {
				t.Errorf("round %d: %s", round, msg)
			}
		}
	}
}

// TestLaunchThatHangsSaysSo: a probe that never finishes (here a shell that sleeps) is
// reported as a launch that did not finish, with what to try, not as bwrapkit's own failure.
func TestLaunchThatHangsSaysSo(t *testing.T) {
	cfg := liveConfig(t, systemBwrap(t))
	cfg.Probe = probe.Command{Argv: []string{"/bin/sh", "-c", "sleep 30"}}
	cfg.Checks = []string{"launch"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	got, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	launch := checkByID(t, got, "launch")
	if launch.Status != report.StatusFail || !strings.Contains(launch.Summary, "did not finish") || !strings.Contains(launch.Remedy, "quieter host") {
		t.Errorf("launch: %s %q (remedy %q)", launch.Status, launch.Summary, launch.Remedy)
	}
}
