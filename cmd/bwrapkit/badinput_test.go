package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// TestBadInputIsRefusedBeforeAnythingRuns drives the built binary with each bad input a
// user can give: each gets its status (2, usage) and one message naming the input and
// the fix, the command (which would leave a marker) never runs, and nothing is made on
// the host (no project HOME, no report). A bad input that was once accepted lost the
// report after the command had run with exit 0, or failed late in bwrap with 125.
func TestBadInputIsRefusedBeforeAnythingRuns(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	environ, cache := attackEnv(t, bwrap)
	workdir := livetest.TempDir(t)
	files := livetest.TempDir(t)
	marker := filepath.Join(workdir, "ran")
	if err := os.Mkdir(filepath.Join(files, "a-directory"), 0o755); err != nil {
		t.Fatal(err)
	}
	policy := func(name, body string) string {
		path := filepath.Join(files, name)
		if err := os.WriteFile(path, []byte(`{"schema":"bwrapkit.policy/v1",`+body+`}`), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	longName := filepath.Join(files, strings.Repeat("r", 300))
	for _, tc := range []struct {
		name  string
		args  []string
		wants []string // in the one message
	}{
		{"--report names a directory", []string{"--report", filepath.Join(files, "a-directory")}, []string{"--report", "names a directory", "report.json"}},
		{"--report names a directory with a slash", []string{"--report", filepath.Join(files, "a-directory") + "/"}, []string{"--report", "names a directory"}},
		{"--report name too long", []string{"--report", longName}, []string{"--report", "300 bytes", "shorter"}},
		// A policy file may lie where an earlier run could rewrite it, so it never says where
		// bwrapkit writes: any report it names is refused, a directory included.
		{"a policy's report", []string{"--policy", policy("report-dir.json", `"report":"`+filepath.Join(files, "a-directory")+`"`)}, []string{"--policy", "cannot set report", "--report FILE"}},
		{"--ro the workdir", []string{"--ro", workdir}, []string{"--ro", "is the workdir", "--protect"}},
		{"--ro . from inside the workdir", []string{"--ro", workdir + "/."}, []string{"--ro", "is the workdir"}},
		{"a NUL in a policy env value", []string{"--policy", policy("nul.json", `"env":["A=b\u0000c"]`)}, []string{"--env", "NUL", "remove it"}},
		{"a repeated policy key", []string{"--policy", policy("twice.json", `"ro":["/usr"],"ro":["/opt"]`)}, []string{"--policy", `"ro" twice`}},
		{"a repeated policy key in another case", []string{"--policy", policy("case.json", `"net":true,"Net":false`)}, []string{"--policy", "twice"}},
		{"an unknown flag", []string{"--rx", "/usr"}, []string{"unknown flag: --rx"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"run", "--workdir", workdir}, tc.args...), "--", "/usr/bin/touch", marker)
			got := binaryRun(t, environ, args...)
			if got.status != exitUsage {
				t.Errorf("status %d, want %d (usage); stderr %q", got.status, exitUsage, got.stderr)
			}
			message := strings.TrimSpace(got.stderr)
			if strings.Count(message, "\n") > 0 || !strings.HasPrefix(message, "bwrapkit: ") {
				t.Errorf("want one bwrapkit line, got %q", got.stderr)
			}
			for _, want := range tc.wants {
				if !strings.Contains(message, want) {
					t.Errorf("the message does not say %q: %q", want, message)
				}
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the command ran")
			}
			if _, err := os.Stat(filepath.Join(cache, "bwrapkit", "home")); err == nil {
				t.Errorf("a refused run made the project HOMEs' directory")
			}
		})
	}
	if _, err := os.Stat(longName); err == nil {
		t.Error("a report was written")
	}
}

// TestPrintPolicyMakesNothing: --print-policy shows the HOME a run would use and makes
// none of it.
func TestPrintPolicyMakesNothing(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	environ, cache := attackEnv(t, bwrap)
	workdir := livetest.TempDir(t)
	got := binaryRun(t, environ, "run", "--workdir", workdir, "--print-policy")
	if got.status != 0 {
		t.Fatalf("status %d %q", got.status, got.stderr)
	}
	var shown struct {
		HomeDir string `json:"home_dir"`
	}
	if err := json.Unmarshal([]byte(got.stdout), &shown); err != nil || !strings.HasPrefix(shown.HomeDir, cache) {
		t.Fatalf("precondition: the policy shows the project HOME under %s: %v %q", cache, err, got.stdout)
	}
	if _, err := os.Stat(cache); err == nil {
		t.Errorf("--print-policy made %s", cache)
	}
	// Commit mode makes .git's missing hooks/ and info/ for a run (a read-only bind needs
	// them), never for a preview.
	if err := os.MkdirAll(filepath.Join(workdir, ".git", "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(workdir, ".git", "config"), []byte("[core]\n"), 0o644)
	os.WriteFile(filepath.Join(workdir, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	if got := binaryRun(t, environ, "run", "--workdir", workdir, "--git", "commit", "--print-policy"); got.status != 0 {
		t.Fatalf("--git commit --print-policy: %d %q", got.status, got.stderr)
	}
	for _, made := range []string{"hooks", "info", "modules"} {
		if _, err := os.Stat(filepath.Join(workdir, ".git", made)); err == nil {
			t.Errorf("--print-policy --git commit made .git/%s", made)
		}
	}
}

// TestHomeFallbackIsAnnounced: with no cache directory to hold a project HOME, the run
// goes on with an empty HOME inside, and says so on stderr and in the report.
func TestHomeFallbackIsAnnounced(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	workdir := livetest.TempDir(t)
	report := filepath.Join(livetest.TempDir(t), "report.json")
	environ := []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "BWRAPKIT_BWRAP=" + bwrap, "TMPDIR=" + livetest.TempDir(t)}
	got := binaryRun(t, environ, "run", "--workdir", workdir, "--report", report, "--", "/bin/sh", "-c", `echo "$HOME"`)
	if got.status != 0 || strings.TrimSpace(got.stdout) != "/tmp/home" {
		t.Fatalf("precondition: the run falls back to the ephemeral HOME: %d %q %q", got.status, got.stdout, got.stderr)
	}
	if !strings.Contains(got.stderr, "no per-project HOME could be made") || !strings.Contains(got.stderr, "XDG_CACHE_HOME") {
		t.Errorf("the fallback is not announced on stderr: %q", got.stderr)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var written struct{ Warnings []string }
	if err := json.Unmarshal(data, &written); err != nil || len(written.Warnings) != 1 || !strings.Contains(written.Warnings[0], "no per-project HOME") {
		t.Errorf("the fallback is not in the report: %v %s", err, data)
	}
}

// TestTinyLimitsAreOneLine: under an open-files or process limit too small for a run,
// the Go runtime once died with a stack dump and exit 2 (the usage status). bwrapkit
// checks them at start: one line, exit 125, and the command does not run.
func TestTinyLimitsAreOneLine(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	environ, _ := attackEnv(t, bwrap)
	workdir := livetest.TempDir(t)
	marker := filepath.Join(workdir, "ran")
	for _, limit := range []string{"-n 5", "-n 40"} {
		cmd := exec.Command("/bin/sh", "-c", "ulimit "+limit+" && exec \"$0\" run --workdir \"$1\" -- /usr/bin/touch \"$2\"", builtBinary, workdir, marker)
		cmd.Env = environ
		out, err := cmd.CombinedOutput()
		exitErr, _ := err.(*exec.ExitError)
		if exitErr == nil || exitErr.ExitCode() != exitUnavailable {
			t.Errorf("ulimit %s: want exit %d, got %v: %s", limit, exitUnavailable, err, out)
		}
		message := strings.TrimSpace(string(out))
		if strings.Contains(message, "\n") || !strings.Contains(message, "open-files limit") || !strings.Contains(message, "ulimit -n") {
			t.Errorf("ulimit %s: want one line naming the limit and the fix: %q", limit, out)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("ulimit %s: the command ran", limit)
		}
	}
}

// TestWithoutProcTheMessageSaysSo: bwrapkit run in a mount namespace whose /proc is an
// empty tmpfs (a chroot or container without one) once said "it now leads to (it printed
// nothing)". It refuses with 125, naming /proc and the fix, and the command never runs.
func TestWithoutProcTheMessageSaysSo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a mount namespace without /proc needs root (unshare -m); the run as root covers it")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatal("precondition: unshare(1) (util-linux) is on PATH")
	}
	bwrap := livetest.SystemBwrap(t)
	environ, _ := attackEnv(t, bwrap)
	workdir := livetest.TempDir(t)
	marker := filepath.Join(workdir, "ran")
	script := `mount --make-rprivate / && mount -t tmpfs none /proc && test ! -e /proc/self && exec "$0" run --workdir "$1" -- /usr/bin/touch "$2"`
	cmd := exec.Command(unshare, "-m", "/bin/sh", "-c", script, builtBinary, workdir, marker)
	cmd.Env = environ
	out, err := cmd.CombinedOutput()
	exitErr, _ := err.(*exec.ExitError)
	if exitErr == nil || exitErr.ExitCode() != exitUnavailable {
		t.Fatalf("want exit %d, got %v: %s", exitUnavailable, err, out)
	}
	if !strings.Contains(string(out), "/proc is not mounted where bwrapkit runs") || strings.Contains(string(out), "printed nothing") {
		t.Errorf("the message does not name /proc: %s", out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran")
	}
}
