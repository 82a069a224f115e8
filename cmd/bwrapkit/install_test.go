package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// installRun is one install command line run through cobra, with captured streams and
// the test-only options set.
type installRun struct {
	args     []string
	home     string
	environ  []string
	arch     string
	uid      int
	terminal bool
}

func (r installRun) run(t *testing.T) outcome {
	t.Helper()
	var stdout, stderr bytes.Buffer
	environ := r.environ
	if environ == nil {
		environ = []string{"PATH=" + os.Getenv("PATH")}
	}
	s := streams{
		In: strings.NewReader("stdin must never be read\n"), Out: &stdout, Err: &stderr, ErrIsTerminal: r.terminal,
		Getenv: getenvFrom(environ), Environ: func() []string { return environ },
	}
	cmd := newInstallCmdWith(s, &globalOptions{Home: r.home}, func(ctx context.Context, opts *installOptions) error {
		if r.arch != "" {
			opts.arch = r.arch
		}
		opts.geteuid = func() int { return r.uid }
		opts.stallLimit = 5 * time.Second
		return runInstall(ctx, opts)
	})
	// As the root command does: errors are printed once, by exitStatus.
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetArgs(append([]string{}, r.args...)) // never nil: cobra would read os.Args
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	err := cmd.ExecuteContext(context.Background())
	status := exitStatus(err, &stderr)
	return outcome{status, stdout.String(), stderr.String()}
}

// pinnedManifest writes a manifest pinning the host's bwrap, served from a plain path.
func pinnedManifest(t *testing.T, arch string) (path, sum string) {
	t.Helper()
	data, err := os.ReadFile("/usr/bin/bwrap")
	if err != nil {
		t.Skipf("no real bwrap to install: %v", err)
	}
	version, err := bwrapVersion("/usr/bin/bwrap")
	if err != nil {
		t.Skipf("the real bwrap does not run: %v", err)
	}
	digest := sha256.Sum256(data)
	sum = hex.EncodeToString(digest[:])
	manifest := fmt.Sprintf(`{"schema":"bwrapkit.manifest/v1","artifacts":[{"version":%q,"arch":%q,"sha256":%q,"size":%d,
		"sources":[{"url":"http://127.0.0.1:1/unreachable","member":""},{"url":"/usr/bin/bwrap","member":""}]}]}`, version, arch, sum, len(data))
	return writeManifest(t, manifest), sum
}

func bwrapVersion(bwrap string) (string, error) {
	out, err := exec.Command(bwrap, "--version").Output()
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "bubblewrap "), nil
}

func writeManifest(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestInstallFlagsParse(t *testing.T) {
	var got *installOptions
	cmd := newInstallCmdWith(streams{}, &globalOptions{}, func(_ context.Context, opts *installOptions) error { got = opts; return nil })
	cmd.SetArgs([]string{"--manifest", "m.json", "--mirror", "/srv/mirror", "--method", "pinned", "--timeout", "90s", "--force", "--json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.manifest != "m.json" || got.mirror != "/srv/mirror" || got.method != "pinned" || got.timeout != 90*time.Second || !got.force || !got.json {
		t.Errorf("parsed %+v", got)
	}

	cmd = newInstallCmdWith(streams{}, &globalOptions{}, func(_ context.Context, opts *installOptions) error { got = opts; return nil })
	cmd.SetArgs([]string{}) // not nil: cobra would read os.Args
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.method != "auto" || got.timeout != 5*time.Minute || got.force || got.json || got.manifest != "" {
		t.Errorf("defaults %+v", got)
	}
}

// TestInstallBadUsageExitsTwo: every bad manifest or flag is refused with one line and
// exit 2 before anything is fetched or created.
func TestInstallBadUsageExitsTwo(t *testing.T) {
	good := `{"version":"0.12.0","arch":"amd64","sha256":"253c70372599ac19851ffcc923acca01fe1bcf6b4b03fce789fd9fb3e2ff6270","size":945328,"sources":[{"url":"http://127.0.0.1:1/b","member":""}]}`
	manifest := func(artifact string) string {
		return writeManifest(t, `{"schema":"bwrapkit.manifest/v1","artifacts":[`+artifact+`]}`)
	}
	for _, tc := range []struct {
		name string
		args []string
		arch string
		want string
	}{
		{"not json", []string{"--manifest", writeManifest(t, "bwrap 0.12.0, trust me")}, "", "not a bwrapkit manifest"},
		{"wrong schema", []string{"--manifest", writeManifest(t, `{"schema":"bwrapkit.manifest/v0","artifacts":[`+good+`]}`)}, "", `schema is "bwrapkit.manifest/v0"`},
		{"no artifact for arch", []string{"--manifest", manifest(good)}, "arm64", "no artifact for arch arm64"},
		{"default manifest on riscv64", nil, "riscv64", "use a manifest with a riscv64 artifact, or --method package"},
		{"malformed sha256", []string{"--manifest", manifest(strings.Replace(good, "253c", "253C", 1))}, "", "64 lowercase hex"},
		{"malformed url", []string{"--manifest", manifest(strings.Replace(good, "http://127.0.0.1:1/b", "ftp://mirror/b", 1))}, "", `scheme "ftp"`},
		{"missing manifest", []string{"--manifest", "/nonexistent/manifest.json"}, "", "no such file"},
		{"stdin as manifest", []string{"--manifest", "/dev/stdin"}, "", "/dev/stdin is a symbolic link"},
		{"null device as manifest", []string{"--manifest", "/dev/null"}, "", "/dev/null is a device"},
		{"file URL of a directory as manifest", []string{"--manifest", "file:///etc"}, "", "/etc is a directory"},
		{"manifest over 1 MiB", []string{"--manifest", writeManifest(t, strings.Repeat(" ", 1<<20+1))}, "", "larger than the 1048576 bytes allowed"},
		{"unknown method", []string{"--method", "brew"}, "", `unknown method "brew"`},
		{"embedded method in a build without one", []string{"--method", "embedded"}, "", "carries no embedded bwrap"},
		{"zero timeout", []string{"--timeout", "0s"}, "", "--timeout must be positive"},
		{"bad timeout", []string{"--timeout", "soon"}, "", "invalid argument"},
		{"bad mirror", []string{"--mirror", "mirror/relative"}, "", "neither a URL nor an absolute path"},
		{"mirror with package", []string{"--method", "package", "--mirror", "/srv"}, "", "not to --method package"},
		{"argument", []string{"bwrap"}, "", `unexpected argument "bwrap"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "home")
			got := installRun{args: tc.args, home: home, arch: tc.arch}.run(t)
			if got.status != exitUsage {
				t.Errorf("status %d, want %d; stderr %q", got.status, exitUsage, got.stderr)
			}
			if !strings.Contains(got.stderr, tc.want) || strings.Count(got.stderr, "\n") != 1 || !strings.HasPrefix(got.stderr, "bwrapkit: ") {
				t.Errorf("stderr %q: want one line saying %q", got.stderr, tc.want)
			}
			if got.stdout != "" {
				t.Errorf("stdout %q", got.stdout)
			}
			if _, err := os.Stat(home); err == nil {
				t.Error("the home was created despite bad usage")
			}
		})
	}
}

// TestInstallRegistered runs install through the real root command.
func TestInstallRegistered(t *testing.T) {
	got := invocation{args: []string{"install", "--method", "brew"}}.run(t)
	if got.status != exitUsage || got.stderr != "bwrapkit: unknown method \"brew\" (want auto, embedded, pinned or package)\n" {
		t.Errorf("status %d, stderr %q", got.status, got.stderr)
	}
	help := invocation{args: []string{"install", "--help"}}.run(t)
	if help.status != exitOK || !strings.Contains(help.stdout, "Examples:") || !strings.Contains(help.stdout, "--mirror") {
		t.Errorf("install --help: status %d\n%s", help.status, help.stdout)
	}
}

func TestInstallJSONAndIdempotence(t *testing.T) {
	manifest, sum := pinnedManifest(t, "amd64")
	home := filepath.Join(t.TempDir(), "home")
	run := installRun{args: []string{"--manifest", manifest, "--method", "pinned", "--json"}, home: home, arch: "amd64"}
	for i, wantChanged := range []bool{true, false} {
		got := run.run(t)
		if got.status != exitOK {
			t.Fatalf("run %d: status %d, stderr %s", i, got.status, got.stderr)
		}
		var report map[string]any
		if err := json.Unmarshal([]byte(got.stdout), &report); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, got.stdout)
		}
		want := map[string]any{
			"schema": "bwrapkit.install/v1", "method": "pinned", "path": filepath.Join(home, "bin", "bwrap"),
			"sha256": sum, "changed": wantChanged,
		}
		for key, value := range want {
			if report[key] != value {
				t.Errorf("run %d: %s = %v, want %v", i, key, report[key], value)
			}
		}
		if report["version"] == "" || len(report) != 6 {
			t.Errorf("run %d: report %v", i, report)
		}
	}
	got := run.run(t)
	if !strings.Contains(got.stderr, "bwrapkit: ") || strings.Contains(got.stderr, "\x1b") {
		t.Errorf("plain progress expected on a non-terminal stderr: %q", got.stderr)
	}
}

func TestInstallProgress(t *testing.T) {
	manifest, _ := pinnedManifest(t, "amd64")
	plain := installRun{args: []string{"--manifest", manifest}, home: filepath.Join(t.TempDir(), "home"), arch: "amd64"}.run(t)
	for _, want := range []string{"bwrapkit: downloading /usr/bin/bwrap\n", "bwrapkit: installed bwrap "} {
		if !strings.Contains(plain.stderr, want) {
			t.Errorf("plain progress lacks %q:\n%s", want, plain.stderr)
		}
	}
	if plain.stdout != "" {
		t.Errorf("progress on stdout: %q", plain.stdout)
	}
	terminal := installRun{args: []string{"--manifest", manifest}, home: filepath.Join(t.TempDir(), "home"), arch: "amd64", terminal: true}.run(t)
	if terminal.status != exitOK || !strings.Contains(terminal.stderr, "downloading") || !strings.Contains(terminal.stderr, "%") {
		t.Errorf("no progress bar on a terminal: status %d\n%s", terminal.status, terminal.stderr)
	}
}

func TestInstallFailureExitsOne(t *testing.T) {
	manifest := writeManifest(t, `{"schema":"bwrapkit.manifest/v1","artifacts":[{"version":"0.12.0","arch":"amd64",
		"sha256":"253c70372599ac19851ffcc923acca01fe1bcf6b4b03fce789fd9fb3e2ff6270","size":945328,
		"sources":[{"url":"http://127.0.0.1:1/bwrap","member":""}]}]}`)
	got := installRun{args: []string{"--manifest", manifest, "--method", "pinned"}, home: filepath.Join(t.TempDir(), "home"), arch: "amd64"}.run(t)
	if got.status != exitFailure || !strings.Contains(got.stderr, "bwrapkit: no source delivered bwrap 0.12.0") || !strings.Contains(got.stderr, "connection refused") {
		t.Errorf("status %d, stderr %q", got.status, got.stderr)
	}

	// Without root the package method changes nothing and prints the command to run.
	dir := t.TempDir()
	if err := livetest.WriteProgram(filepath.Join(dir, "apt-get"), []byte("#!/bin/sh\ntouch \"$0.ran\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got = installRun{args: []string{"--method", "package"}, home: filepath.Join(t.TempDir(), "home"), environ: []string{"PATH=" + dir}, uid: 1000}.run(t)
	if got.status != exitFailure || !strings.Contains(got.stderr, "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends bubblewrap") {
		t.Errorf("status %d, stderr %q", got.status, got.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "apt-get.ran")); err == nil {
		t.Error("apt-get ran without root")
	}
}

func TestInstallTimeoutExitsOne(t *testing.T) {
	// A server that accepts and never answers: only the deadline ends the wait.
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	manifest := writeManifest(t, `{"schema":"bwrapkit.manifest/v1","artifacts":[{"version":"0.12.0","arch":"amd64",
		"sha256":"253c70372599ac19851ffcc923acca01fe1bcf6b4b03fce789fd9fb3e2ff6270","size":945328,
		"sources":[{"url":"http://`+listener.Addr().String()+`/bwrap","member":""}]}]}`)
	started := time.Now()
	got := installRun{args: []string{"--manifest", manifest, "--method", "pinned", "--timeout", "300ms"}, home: filepath.Join(t.TempDir(), "home"), arch: "amd64"}.run(t)
	if got.status != exitFailure || !strings.Contains(got.stderr, "--timeout 300ms expired") {
		t.Errorf("status %d, stderr %q", got.status, got.stderr)
	}
	if elapsed := time.Since(started); elapsed > 5*time.Second {
		t.Errorf("--timeout 300ms took %s", elapsed)
	}
}

// TestVersionJSON: an ordinary build names no embedded bwrap (null, not absent).
func TestVersionJSON(t *testing.T) {
	got := invocation{args: []string{"version", "--json"}}.run(t)
	var report map[string]any
	if err := json.Unmarshal([]byte(got.stdout), &report); err != nil || got.status != exitOK {
		t.Fatalf("status %d, %v\n%s", got.status, err, got.stdout)
	}
	embedded, present := report["embedded_bwrap"]
	if report["schema"] != "bwrapkit.version/v1" || report["version"] == "" || !present || embedded != nil {
		t.Errorf("version --json = %v", report)
	}
	if plain := (invocation{args: []string{"version"}}.run(t)); !strings.HasPrefix(plain.stdout, "bwrapkit ") {
		t.Errorf("version: %q", plain.stdout)
	}
}
