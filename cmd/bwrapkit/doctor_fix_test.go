package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/doctor/fix"
	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/remedy"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/install"
	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// doctor --fix as a command line: the fixer's own effects are tested in the doctor package.

// The fixer's narrative goes to the command's stderr, never into the report on stdout.
func TestDoctorFixNarratesOnStderrOnly(t *testing.T) {
	var stdout, stderr bytes.Buffer
	environ := []string{"PATH=/nonexistent", "HOME=/home/dev"}
	opts := &doctorOptions{
		streams: streams{Out: &stdout, Err: &stderr, Getenv: getenvFrom(environ), Environ: func() []string { return environ }},
		global:  &globalOptions{Home: "/home/dev/.local/share/bwrapkit"},
		fix:     true,
		fixEnv:  fixEnv{Env: fix.Env{Root: t.TempDir(), Geteuid: func() int { return 1000 }}},
	}
	broken := report.Report{Checks: []report.Check{{ID: "launch", Status: report.StatusFail,
		Fix: &remedy.Fix{Kind: remedy.AppArmor, Bwrap: "/usr/bin/bwrap"}}}}
	recheck := func(context.Context) (report.Report, error) {
		return report.Report{}, errors.New("nothing was fixed, so nothing is checked again")
	}
	got, err := newFixer(opts).Run(context.Background(), recheck, broken)
	if err != nil || len(got.Checks) != 1 || stdout.Len() != 0 ||
		!strings.HasPrefix(stderr.String(), "bwrapkit: fix: not applied: give /usr/bin/bwrap an AppArmor profile") {
		t.Errorf("err %v, stdout %q, stderr:\n%s", err, stdout.String(), stderr.String())
	}
}

// doctorRun is one doctor command line run in-process with test-only options.
type doctorRun struct {
	args    []string
	home    string
	environ []string
	env     fixEnv
}

func (r doctorRun) run(t *testing.T) outcome {
	t.Helper()
	var stdout, stderr bytes.Buffer
	s := streams{In: strings.NewReader("never read\n"), Out: &stdout, Err: &stderr,
		Getenv: getenvFrom(r.environ), Environ: func() []string { return r.environ }}
	scratch := livetest.TempDir(t)
	cmd := newDoctorCmdWith(s, &globalOptions{Home: r.home}, func(ctx context.Context, opts *doctorOptions) error {
		opts.probe = probe.Command{Argv: []string{builtBinary, probeCommandName}}
		opts.tempDir = scratch
		opts.fixEnv = r.env
		return runDoctor(ctx, opts)
	})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetArgs(append([]string{}, r.args...))
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	err := cmd.ExecuteContext(context.Background())
	return outcome{exitStatus(err, &stderr), stdout.String(), stderr.String()}
}

// livePinEnv installs pin as a user would: were the pinned source unreachable, auto's
// fallback to the package manager must print its command, not run apt-get as root.
func livePinEnv(pin install.Artifact) fixEnv {
	return fixEnv{Env: fix.Env{Geteuid: func() int { return 65534 }}, Artifact: pin}
}

// cachedPin is the built-in pin served from the directory holding the real static build.
func cachedPin(t *testing.T) install.Artifact {
	t.Helper()
	livetest.SystemBwrap(t) // a host where sandboxes run at all
	if runtime.GOARCH != "amd64" {
		livetest.Skip(t, "the cached static bwrap is built for amd64")
	}
	cache := livetest.CachedBwraps()
	if _, err := os.Stat(filepath.Join(cache, "bwrap-0.12.0-linux-amd64.tar.gz")); err != nil {
		livetest.Skip(t, "no cached static bwrap: run scripts/get-test-bwraps.sh")
	}
	artifact, err := install.Default().Artifact("amd64")
	if err == nil {
		artifact, err = artifact.WithMirror(cache)
	}
	if err != nil {
		t.Fatal(err)
	}
	return artifact
}

func TestDoctorFixInstallsWhereNoBwrapIs(t *testing.T) {
	pin := cachedPin(t)
	home := t.TempDir()
	got := doctorRun{args: []string{"--fix", "--json"}, home: home,
		environ: []string{"PATH=" + t.TempDir(), "HOME=" + t.TempDir()}, env: livePinEnv(pin)}.run(t)
	var report struct {
		Status string
		Bwrap  struct{ Path, Source, Version string }
		Checks []struct{ ID, Status, Summary string }
	}
	if err := json.Unmarshal([]byte(got.stdout), &report); err != nil {
		t.Fatalf("stdout is not only the report: %v\n%s\nstderr:\n%s", err, got.stdout, got.stderr)
	}
	realHome, _ := filepath.EvalSymlinks(home)
	installed := filepath.Join(realHome, "versions", pin.ID(), "bwrap")
	if got.status != 0 || report.Status == "fail" || report.Bwrap.Path != installed || report.Bwrap.Source != "managed" || report.Bwrap.Version != "0.12.0" {
		t.Errorf("status %d, report %+v\nstderr:\n%s", got.status, report, got.stderr)
	}
	for _, want := range []string{
		"bwrapkit: fix: installing bwrap 0.12.0 into " + home + " (method auto, at most 5m0s)\n",
		"bwrapkit: fix: install: installed bwrap 0.12.0 (sha256 253c70372599ac19) at " + filepath.Join(home, "bin", "bwrap") + "\n",
		"bwrapkit: fix: to undo the install: rm -r " + filepath.Join(home, "bin", "bwrap") + " " + filepath.Join(home, "versions", pin.ID()) + "\n",
		"bwrapkit: fix: running the checks again\n",
	} {
		if !strings.Contains(got.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, got.stderr)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(got.stderr), "\n") {
		if !strings.HasPrefix(line, "bwrapkit: fix: ") {
			t.Errorf("stderr line without the fix prefix: %q", line)
		}
	}
}

func TestDoctorFixInstallShadowedOnPath(t *testing.T) {
	pin := cachedPin(t)
	path := t.TempDir()
	if err := os.Symlink("/bin/true", filepath.Join(path, "bwrap")); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	// Named by BWRAPKIT_BWRAP: outside /usr, /bin and /sbin a PATH search would pass
	// over it, but an explicit choice always wins over the managed install.
	got := doctorRun{args: []string{"--fix"}, home: home,
		environ: []string{"PATH=" + path, "HOME=" + t.TempDir(), "BWRAPKIT_BWRAP=" + filepath.Join(path, "bwrap")}, env: livePinEnv(pin)}.run(t)
	installed, _ := filepath.EvalSymlinks(filepath.Join(home, "bin", "bwrap"))
	impostor, _ := filepath.EvalSymlinks("/bin/true")
	if got.status != 1 || installed == "" || !strings.Contains(got.stdout, "✗ bwrap.features") || strings.Contains(got.stdout, "bwrapkit: fix:") ||
		!strings.Contains(got.stderr, "bwrapkit: fix: the installed "+installed+" is not the bwrap in use: "+impostor+" (from env) comes first") {
		t.Errorf("status %d, installed %q\nstdout:\n%s\nstderr:\n%s", got.status, installed, got.stdout, got.stderr)
	}
}

// A release build's doctor --fix installs the bwrap it carries, as `bwrapkit install` does:
// here the pinned source is an empty mirror (the network of an offline host), so without
// the embedded copy the install fix has nothing to install.
func TestDoctorFixInstallsTheEmbeddedBwrapOffline(t *testing.T) {
	cachedPin(t) // the real static build is there, for amd64
	embedded, err := os.ReadFile(filepath.Join(livetest.CachedBwraps(), "bwrap-0.12.0"))
	if err != nil {
		livetest.Skip(t, "no cached static bwrap: run scripts/get-test-bwraps.sh")
	}
	pin, err := install.Default().Artifact("amd64")
	if err == nil {
		pin, err = pin.WithMirror(t.TempDir()) // nothing there: every download fails
	}
	if err != nil {
		t.Fatal(err)
	}
	env := livePinEnv(pin)
	env.Embedded = embedded
	home := t.TempDir()
	got := doctorRun{args: []string{"--fix", "--json"}, home: home,
		environ: []string{"PATH=" + t.TempDir(), "HOME=" + t.TempDir()}, env: env}.run(t)
	realHome, _ := filepath.EvalSymlinks(home)
	var report struct {
		Status string
		Bwrap  struct{ Path, Source string }
	}
	if err := json.Unmarshal([]byte(got.stdout), &report); err != nil {
		t.Fatalf("stdout is not only the report: %v\n%s\nstderr:\n%s", err, got.stdout, got.stderr)
	}
	if got.status != 0 || report.Status == "fail" || report.Bwrap.Path != filepath.Join(realHome, "versions", pin.ID(), "bwrap") {
		t.Errorf("status %d, report %+v\nstderr:\n%s", got.status, report, got.stderr)
	}
	for _, want := range []string{"bwrapkit: fix: install: using the bwrap embedded in this build\n",
		"bwrapkit: fix: to undo the install: rm -r " + filepath.Join(home, "bin", "bwrap")} {
		if !strings.Contains(got.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, got.stderr)
		}
	}
}
