package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

func TestRunBadUsageExitsTwoAndRunsNothing(t *testing.T) {
	workdir := t.TempDir()
	marker := filepath.Join(workdir, "ran")
	file := filepath.Join(workdir, "file")
	os.WriteFile(file, nil, 0o644)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"run", "--nope", "--", "touch", marker}, "unknown flag"},
		{"missing command", []string{"run", "--workdir", workdir}, "no command given"},
		{"missing command after --", []string{"run", "--workdir", workdir, "--"}, "no command given"},
		{"env without =", []string{"run", "--workdir", workdir, "--env", "NOVALUE", "--", "touch", marker}, "expected NAME=VALUE"},
		{"workdir missing", []string{"run", "--workdir", filepath.Join(workdir, "nope"), "--", "touch", marker}, "does not exist"},
		{"workdir is a file", []string{"run", "--workdir", file, "--", "touch", marker}, "is not a directory"},
		{"workdir is a system root", []string{"run", "--workdir", "/etc", "--", "touch", marker}, "system directory /etc"},
		{"workdir is /", []string{"run", "--workdir", "/", "--", "touch", marker}, "is / itself"},
		{"workdir is /bin on merged /usr", []string{"run", "--workdir", "/bin", "--", "touch", marker}, "system directory /usr"},
		{"workdir is /tmp", []string{"run", "--workdir", "/tmp", "--", "touch", marker}, "is /tmp itself"},
		{"ro of /", []string{"run", "--workdir", workdir, "--ro", "/", "--", "touch", marker}, "would show the host itself"},
		{"ro of /proc/1", []string{"run", "--workdir", workdir, "--ro", "/proc/1", "--", "touch", marker}, "would show the host itself"},
		{"negative timeout", []string{"run", "--workdir", workdir, "--timeout", "-1s", "--", "touch", marker}, "must not be negative"},
		{"bad timeout", []string{"run", "--timeout", "soon", "--", "touch", marker}, "invalid argument"},
		{"path missing", []string{"run", "--workdir", workdir, "--path", filepath.Join(workdir, "nope"), "--", "touch", marker}, "does not exist"},
		{"path of /proc", []string{"run", "--workdir", workdir, "--path", "/proc/self", "--", "touch", marker}, "would show the host itself"},
		{"path of a file", []string{"run", "--workdir", workdir, "--path", file, "--", "touch", marker}, "is not a directory"},
		{"rw missing", []string{"run", "--workdir", workdir, "--rw", filepath.Join(workdir, "nope"), "--", "touch", marker}, "does not exist"},
		{"rw of /etc", []string{"run", "--workdir", workdir, "--rw", "/etc", "--", "touch", marker}, "system directory /etc"},
		{"rw of /home", []string{"run", "--workdir", workdir, "--rw", "/home", "--", "touch", marker}, "is /home itself"},
		{"rw inside the workdir", []string{"run", "--workdir", workdir, "--rw", file, "--", "touch", marker}, "encloses or lies inside the workdir"},
		{"git other value", []string{"run", "--workdir", workdir, "--git", "write", "--", "touch", marker}, "must be readonly (the default) or commit"},
		{"cwd outside", []string{"run", "--workdir", workdir, "--cwd", "..", "--", "touch", marker}, "is outside the workdir"},
		{"cwd absolute", []string{"run", "--workdir", workdir, "--cwd", "/tmp", "--", "touch", marker}, "must be relative to the workdir"},
		{"cwd missing", []string{"run", "--workdir", workdir, "--cwd", "nope", "--", "touch", marker}, "must name a directory inside the workdir"},
		{"home-dir inside the workdir", []string{"run", "--workdir", filepath.Dir(workdir), "--home-dir", workdir, "--", "touch", marker}, "lies inside the workdir"},
		{"policy not JSON", []string{"run", "--workdir", workdir, "--policy", writeFile(t, "not json"), "--", "touch", marker}, "is not a bwrapkit.policy/v1 document"},
		{"policy other schema", []string{"run", "--workdir", workdir, "--policy", writeFile(t, `{"schema":"bwrapkit.policy/v2"}`), "--", "touch", marker}, `want "bwrapkit.policy/v1"`},
		{"policy unknown field", []string{"run", "--workdir", workdir, "--policy", writeFile(t, `{"schema":"bwrapkit.policy/v1","readonly":["/opt"]}`), "--", "touch", marker}, `unknown field "readonly"`},
		{"policy wrong type", []string{"run", "--workdir", workdir, "--policy", writeFile(t, `{"schema":"bwrapkit.policy/v1","ro":"/opt"}`), "--", "touch", marker}, `field "ro"`},
		{"policy two objects", []string{"run", "--workdir", workdir, "--policy", writeFile(t, `{"schema":"bwrapkit.policy/v1"}{}`), "--", "touch", marker}, "more after its JSON object"},
		{"policy bad git", []string{"run", "--workdir", workdir, "--policy", writeFile(t, `{"schema":"bwrapkit.policy/v1","git":"yes"}`), "--", "touch", marker}, "--git yes"},
		{"policy missing", []string{"run", "--workdir", workdir, "--policy", filepath.Join(workdir, "nope.json"), "--", "touch", marker}, "nope.json"},
		{"argv missing command", []string{"argv"}, "no command given"},
		{"locate extra argument", []string{"locate", "x"}, "unexpected argument"},
		{"unknown command", []string{"frobnicate"}, "unknown command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := invocation{args: c.args}.run(t)
			if got.status != exitUsage {
				t.Errorf("status %d, want 2; stderr %q", got.status, got.stderr)
			}
			if !strings.HasPrefix(got.stderr, "bwrapkit: ") || !strings.Contains(got.stderr, c.want) {
				t.Errorf("stderr %q, want a bwrapkit: line naming %q", got.stderr, c.want)
			}
			if lines := strings.Count(strings.TrimSpace(got.stderr), "\n"); lines > 0 {
				t.Errorf("want a one-line reason, got %q", got.stderr)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the command ran")
			}
		})
	}
}

// writeFile is a file in a fresh directory holding content.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunFlagsParse(t *testing.T) {
	var got *runOptions
	cmd := newRunCmdWith(streams{}, &globalOptions{}, func(_ context.Context, opts *runOptions) error { got = opts; return nil })
	cmd.SetArgs([]string{"--workdir", "/w", "--ro", "/a", "--ro", "/b", "--protect", "p", "--net",
		"--env", "A=1", "--pass-env", "B", "--timeout", "3s", "--report", "r.json", "cmd", "--flag", "--", "x"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	want := sandbox.Request{Workdir: "/w", ReadOnly: []string{"/a", "/b"}, Protect: []string{"p"}, Network: true, Env: []string{"A=1"}, PassEnv: []string{"B"}}
	if !reflect.DeepEqual(got.request, want) || got.timeout != 3*time.Second || got.report != "r.json" {
		t.Errorf("parsed %+v", got)
	}
	// Words after the command belong to it, flags and -- included.
	if !slices.Equal(got.command, []string{"cmd", "--flag", "--", "x"}) {
		t.Errorf("command %q", got.command)
	}
}

func TestRunLive(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	workdir := livetest.TempDir(t)
	report := filepath.Join(t.TempDir(), "report.json")
	cache := t.TempDir()
	environ := []string{"PATH=/usr/bin:/bin", "HOME=/root", "XDG_CACHE_HOME=" + cache, "SECRET_TOKEN=hunter2", "LANG=C.UTF-8", "BWRAPKIT_BWRAP=" + bwrap}
	realCache, _ := filepath.EvalSymlinks(cache)
	projectHomes := filepath.Join(realCache, "bwrapkit", "home") + "/"

	got := invocation{args: []string{"run", "--workdir", workdir, "--env", "VISIBLE=1", "--report", report, "--", "env"}, environ: environ}.run(t)
	if got.status != 0 {
		t.Fatalf("status %d: %s", got.status, got.stderr)
	}
	if strings.Contains(got.stdout, "SECRET_TOKEN") || !strings.Contains(got.stdout, "VISIBLE=1") || !strings.Contains(got.stdout, "HOME="+projectHomes) {
		t.Errorf("environment inside:\n%s", got.stdout)
	}
	var doc map[string]any
	data, _ := os.ReadFile(report)
	if err := json.Unmarshal(data, &doc); err != nil || doc["schema"] != "bwrapkit.run/v1" || doc["started"] != true || doc["exit_code"] != 0.0 {
		t.Errorf("report: %s %v", data, err)
	}

	if got := (invocation{args: []string{"run", "--workdir", workdir, "--", "false"}, environ: environ}).run(t); got.status != 1 {
		t.Errorf("false: status %d, want its own 1", got.status)
	}
	if got := (invocation{args: []string{"run", "--workdir", workdir, "--", "no-such-command"}, environ: environ}).run(t); got.status != 127 {
		t.Errorf("missing command: status %d, want 127", got.status)
	}
	got = invocation{args: []string{"run", "--workdir", workdir, "--timeout", "300ms", "--report", report, "--", "sleep", "30"}, environ: environ}.run(t)
	if got.status != exitTimeout || !strings.Contains(got.stderr, "timed out") {
		t.Errorf("timeout: status %d stderr %q", got.status, got.stderr)
	}
	data, _ = os.ReadFile(report)
	if !strings.Contains(string(data), `"timed_out": true`) {
		t.Errorf("report after timeout: %s", data)
	}
}

func TestRunFailsClosedWith125(t *testing.T) {
	livetest.SystemBwrap(t)
	workdir := t.TempDir()
	marker := filepath.Join(workdir, "ran")
	notExecutable := filepath.Join(workdir, "bwrap")
	os.WriteFile(notExecutable, []byte("#!/bin/sh\n"), 0o644)
	emptyHome := t.TempDir()
	cases := []struct {
		name    string
		args    []string
		environ []string
		want    string
	}{
		{"true as bwrap", []string{"--bwrap", "/bin/true"}, nil, "does not behave like bwrap"},
		{"false as bwrap", []string{"--bwrap", "/bin/false"}, nil, "does not behave like bwrap"},
		{"missing explicit path", []string{"--bwrap", "/no/such/bwrap"}, nil, "bwrapkit install"},
		{"not executable via env", nil, []string{"PATH=/usr/bin:/bin", "XDG_CACHE_HOME=" + t.TempDir(), "BWRAPKIT_BWRAP=" + notExecutable}, "not executable"},
		{"no bwrap anywhere", []string{"--home", emptyHome}, []string{"PATH=" + t.TempDir(), "XDG_CACHE_HOME=" + t.TempDir()}, "bwrapkit install"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append(append([]string{"run"}, c.args...), "--workdir", workdir, "--", "/usr/bin/touch", marker)
			got := invocation{args: args, environ: c.environ}.run(t)
			if got.status != exitUnavailable {
				t.Errorf("status %d, want 125; stderr %q", got.status, got.stderr)
			}
			if !strings.Contains(got.stderr, c.want) || !strings.Contains(got.stderr, "next: ") {
				t.Errorf("stderr %q does not name %q and a next step", got.stderr, c.want)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the command ran")
			}
		})
	}
}

// TestE2ERunAsAProcess runs the built binary with a secret in its real environment.
func TestE2ERunAsAProcess(t *testing.T) {
	livetest.SystemBwrap(t)
	workdir := livetest.TempDir(t)
	cmd := exec.Command(builtBinary, "run", "--workdir", workdir, "--", "env")
	cmd.Env = append(os.Environ(), "SECRET_TOKEN=hunter2")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.Contains(string(out), "hunter2") {
		t.Errorf("a host secret reached the sandbox:\n%s", out)
	}
	filter := filepath.Join(t.TempDir(), "filter.bpf")
	argvOut, err := exec.Command(builtBinary, "argv", "--seccomp-file", filter, "--workdir", workdir, "--", "true").Output()
	var argv []string
	if err != nil || json.Unmarshal(argvOut, &argv) != nil || !filepath.IsAbs(argv[0]) || argv[len(argv)-1] != "true" {
		t.Fatalf("argv: %s %v", argvOut, err)
	}
	if slices.Contains(argv, "--json-status-fd") {
		t.Errorf("argv must not carry the status fd: %q", argv)
	}
	// The printed argv is a working command line with its filter on descriptor 3, and
	// fails closed without it.
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err == nil {
		t.Errorf("the printed argv ran without its seccomp filter: %s", out)
	}
	program, err := os.Open(filter)
	if err != nil {
		t.Fatal(err)
	}
	defer program.Close()
	withFilter := exec.Command(argv[0], argv[1:]...)
	withFilter.ExtraFiles = []*os.File{program}
	if out, err := withFilter.CombinedOutput(); err != nil {
		t.Errorf("running the printed argv with its filter on fd 3: %v %s", err, out)
	}
}

func TestLocateCommand(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	got := invocation{args: []string{"locate", "--json"}, environ: []string{"PATH=:relative:" + filepath.Dir(bwrap)}}.run(t)
	var doc struct {
		Path       string `json:"path"`
		Source     string `json:"source"`
		Candidates []struct {
			Path   string `json:"path"`
			Reason string `json:"reason"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal([]byte(got.stdout), &doc); err != nil || got.status != 0 {
		t.Fatalf("status %d %v: %s", got.status, err, got.stdout)
	}
	if doc.Source != "path" || doc.Path == "" || len(doc.Candidates) < 3 || !strings.Contains(doc.Candidates[0].Reason, "empty PATH entry") {
		t.Errorf("locate --json: %+v", doc)
	}
	none := invocation{args: []string{"locate", "--home", t.TempDir()}, environ: []string{"PATH=" + t.TempDir()}}.run(t)
	if none.status != exitFailure || !strings.Contains(none.stderr, "bwrapkit install") {
		t.Errorf("no bwrap: status %d stderr %q", none.status, none.stderr)
	}
}

// TestE2ESignalEndsTheSandbox: SIGTERM to bwrapkit ends everything it started and
// exits 128+15, as a shell reports it.
func TestE2ESignalEndsTheSandbox(t *testing.T) {
	livetest.SystemBwrap(t)
	marker := fmt.Sprintf("1000.%d", time.Now().UnixNano()%1000000007) // sleep's argument, unique
	cmd := exec.Command(builtBinary, "run", "--workdir", livetest.TempDir(t), "--", "sleep", marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(sleepers(marker)) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the sandboxed sleep never started")
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 128+15 {
		t.Errorf("want exit 143, got %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); len(sleepers(marker)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("sandboxed processes survived: %v", sleepers(marker))
		}
	}
}

// sleepers are the host pids of processes running `sleep marker`.
func sleepers(marker string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, entry := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "cmdline"))
		if err == nil && strings.HasPrefix(string(cmdline), "sleep\x00"+marker) {
			pids = append(pids, entry.Name())
		}
	}
	return pids
}

// TestEveryPolicyFieldNamesARunFlag: the library's refusals name a policy field (the
// policy file's key); the CLI shows the flag. Every field of the policy file must map to
// a flag run really has, so a new field cannot be refused under a name the user never
// typed.
func TestEveryPolicyFieldNamesARunFlag(t *testing.T) {
	flags := newRunCmd(streams{}, &globalOptions{}).Flags()
	fields := reflect.TypeOf(sandbox.Request{})
	for i := 0; i < fields.NumField(); i++ {
		tag, _, _ := strings.Cut(fields.Field(i).Tag.Get("json"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		name := flagName(tag)
		if !strings.HasPrefix(name, "--") || flags.Lookup(strings.TrimPrefix(name, "--")) == nil {
			t.Errorf("policy field %s maps to %q, which is no flag of run", tag, name)
		}
	}
	if got := (flagError{&sandbox.PolicyError{Field: "home_dir", Value: "/x", Reason: "no"}}).Error(); got != "--home-dir /x: no" {
		t.Errorf("shown as %q", got)
	}
}
