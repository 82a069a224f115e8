package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/doctor"
	"github.com/bwrapkit/bwrapkit/install"
	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// The fix's effects against a temporary root: /etc, /proc/sys and a managed install live
// under it, and stand-ins for apparmor_parser and sysctl record their argv.

const (
	fixHome    = "/home/dev/.local/share/bwrapkit"
	fixManaged = fixHome + "/versions/253c70372599ac19/bwrap"
	fixDropIn  = "/etc/sysctl.d/90-bwrapkit-userns.conf"
	fixKnob    = "/proc/sys/user/max_user_namespaces"
)

// fixScene is a temporary host root and a fixer acting on it.
type fixScene struct {
	root, bin, log string
	stdout, stderr bytes.Buffer
	opts           *doctorOptions
}

func newFixScene(t *testing.T, euid int) *fixScene {
	t.Helper()
	scene := &fixScene{root: t.TempDir(), bin: t.TempDir()}
	scene.log = filepath.Join(t.TempDir(), "argv.log")
	for _, dir := range []string{"etc/apparmor.d", "etc/sysctl.d", "proc/sys/user", filepath.Dir(fixManaged)} {
		if err := os.MkdirAll(filepath.Join(scene.root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	scene.write(t, fixKnob, "0\n", 0o644)
	scene.write(t, fixManaged, "#!/bin/true\n", 0o755|fs.ModeSetuid)
	scene.standIn(t, "apparmor_parser", 0)
	scene.standIn(t, "sysctl", 0)
	environ := []string{"PATH=/nonexistent", "HOME=/home/dev"}
	scene.opts = &doctorOptions{
		streams: streams{Out: &scene.stdout, Err: &scene.stderr, Getenv: getenvFrom(environ), Environ: func() []string { return environ }},
		global:  &globalOptions{Home: fixHome},
		fix:     true,
		fixEnv: fixEnv{Root: scene.root, Geteuid: func() int { return euid }, LookPath: lookPathIn(scene.bin),
			RunCommand: runFixCommand},
	}
	return scene
}

func (s *fixScene) write(t *testing.T, hostPath, content string, mode fs.FileMode) {
	t.Helper()
	name := filepath.Join(s.root, hostPath)
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(name, mode); err != nil {
		t.Fatal(err)
	}
}

// standIn puts an executable called name on the scene's PATH that logs its argv.
func (s *fixScene) standIn(t *testing.T, name string, status int) {
	t.Helper()
	script := fmt.Sprintf("#!/bin/sh\necho %s \"$@\" >> '%s'\nexit %d\n", name, s.log, status)
	if err := os.WriteFile(filepath.Join(s.bin, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

func (s *fixScene) argv() string {
	data, _ := os.ReadFile(s.log)
	return string(data)
}

func (s *fixScene) read(hostPath string) string {
	data, _ := os.ReadFile(filepath.Join(s.root, hostPath))
	return string(data)
}

// tree lists every file under the root with its mode and content, to prove nothing changed.
func (s *fixScene) tree(t *testing.T) string {
	t.Helper()
	var listing strings.Builder
	err := filepath.WalkDir(s.root, func(name string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(name)
		if err != nil {
			return err
		}
		data := ""
		if info.Mode().IsRegular() {
			content, _ := os.ReadFile(name)
			data = string(content)
		}
		fmt.Fprintf(&listing, "%s %v %q\n", strings.TrimPrefix(name, s.root), info.Mode(), data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return listing.String()
}

// brokenReport is a report of the managed bwrap failing three ways, with the fixes the
// doctor attaches: a setuid build refusing setuid use, the userns limit, AppArmor.
func brokenReport() doctor.Report {
	return doctor.Report{Status: doctor.StatusFail,
		Bwrap: doctor.BwrapInfo{Path: fixManaged, Source: "managed"},
		Checks: []doctor.Check{
			{ID: "bwrap.features", Status: doctor.StatusFail, Fix: &doctor.Fix{Kind: doctor.FixRemoveSetuid, Bwrap: fixManaged,
				Commands: []string{"chmod u-s " + fixManaged}}},
			{ID: "userns", Status: doctor.StatusFail, Fix: &doctor.Fix{Kind: doctor.FixSysctl, Bwrap: fixManaged, File: fixDropIn,
				Content: "user.max_user_namespaces = 15000\n"}},
			{ID: "launch", Status: doctor.StatusFail, Fix: &doctor.Fix{Kind: doctor.FixAppArmorProfile, Bwrap: fixManaged}},
			{ID: "selftest.network", Status: doctor.StatusSkip},
		}}
}

func TestDoctorFixWithoutRootChangesNothing(t *testing.T) {
	scene := newFixScene(t, 1000)
	ran := 0
	scene.opts.fixEnv.RunCommand = func(context.Context, string, ...string) error { ran++; return nil }
	before := scene.tree(t)
	changed, err := newFixer(scene.opts).fix(context.Background(), brokenReport(), scene.opts)
	if err != nil || changed || ran != 0 {
		t.Fatalf("changed %v, err %v, %d commands run", changed, err, ran)
	}
	if after := scene.tree(t); after != before {
		t.Errorf("the root changed:\n%s\nwas:\n%s", after, before)
	}
	profile, _ := doctor.NewAppArmorProfile(fixManaged)
	narrative := scene.stderr.String()
	for _, want := range []string{
		"bwrapkit: fix: not applied: remove the setuid bit from " + fixManaged + " (bwrap.features): changing the mode of a root-owned file needs root\n",
		"    sudo chmod u-s " + fixManaged + "\n",
		"bwrapkit: fix: not applied: set user.max_user_namespaces=15000 now and at boot (" + fixDropIn,
		"    sudo sysctl -w user.max_user_namespaces=15000\n",
		"| sudo tee " + fixDropIn + " >/dev/null\n",
		"bwrapkit: fix: not applied: give " + fixManaged + " an AppArmor profile",
		"| sudo tee " + profile.File + " >/dev/null\n",
		"    sudo apparmor_parser -r " + profile.File + "\n",
	} {
		if !strings.Contains(narrative, want) {
			t.Errorf("stderr lacks %q:\n%s", want, narrative)
		}
	}
	if scene.stdout.Len() != 0 {
		t.Errorf("stdout: %q", scene.stdout.String())
	}
}

func TestDoctorFixAsRoot(t *testing.T) {
	scene := newFixScene(t, 0)
	fix := newFixer(scene.opts)
	changed, err := fix.fix(context.Background(), brokenReport(), scene.opts)
	if err != nil || !changed {
		t.Fatalf("changed %v, err %v\n%s", changed, err, scene.stderr.String())
	}
	profile, _ := doctor.NewAppArmorProfile(fixManaged)
	if got := scene.read(profile.File); got != profile.Content {
		t.Errorf("profile:\n%s\nwant:\n%s", got, profile.Content)
	}
	wantDropIn, _ := doctor.SysctlDropIn(fixDropIn, "", []doctor.SysctlSetting{{Key: "user.max_user_namespaces", Value: "15000"}})
	if got := scene.read(fixDropIn); got != wantDropIn {
		t.Errorf("drop-in:\n%s\nwant:\n%s", got, wantDropIn)
	}
	wantArgv := "sysctl -w user.max_user_namespaces=15000\napparmor_parser -r " + filepath.Join(scene.root, profile.File) + "\n"
	if got := scene.argv(); got != wantArgv {
		t.Errorf("commands run:\n%s\nwant:\n%s", got, wantArgv)
	}
	if info, err := os.Stat(filepath.Join(scene.root, fixManaged)); err != nil || info.Mode() != 0o755 {
		t.Errorf("managed bwrap mode %v, %v; want -rwxr-xr-x", info.Mode(), err)
	}
	narrative := scene.stderr.String()
	for _, want := range []string{
		"bwrapkit: fix: removed the setuid bit from " + fixManaged + "; to undo: chmod u+s " + fixManaged + "\n",
		"bwrapkit: fix: set user.max_user_namespaces = 15000 (was 0)\n",
		"bwrapkit: fix: to undo: rm " + fixDropIn + " && sysctl -w user.max_user_namespaces=0\n",
		"bwrapkit: fix: wrote " + profile.File + ": profile " + profile.Name + " lets " + fixManaged + " create user namespaces\n",
		"to undo: apparmor_parser -R " + profile.File + " && rm " + profile.File + "\n",
	} {
		if !strings.Contains(narrative, want) {
			t.Errorf("stderr lacks %q:\n%s", want, narrative)
		}
	}
	if strings.Contains(narrative, "not applied") || strings.Contains(narrative, "sudo") || scene.stdout.Len() != 0 {
		t.Errorf("stdout %q, stderr:\n%s", scene.stdout.String(), narrative)
	}

	// The next round (after the checks ran again) repeats nothing.
	scene.stderr.Reset()
	if changed, _ := fix.fix(context.Background(), brokenReport(), scene.opts); changed || scene.stderr.Len() != 0 || scene.argv() != wantArgv {
		t.Errorf("second round: changed %v, stderr %q, argv %q", changed, scene.stderr.String(), scene.argv())
	}
}

func TestDoctorFixAsRootRefusesAndRollsBack(t *testing.T) {
	profile, _ := doctor.NewAppArmorProfile(fixManaged)
	report := doctor.Report{Checks: []doctor.Check{{ID: "launch", Status: doctor.StatusFail,
		Fix: &doctor.Fix{Kind: doctor.FixAppArmorProfile, Bwrap: fixManaged}}}}

	t.Run("a profile file we did not write", func(t *testing.T) {
		scene := newFixScene(t, 0)
		foreign := "profile mine " + fixManaged + " {\n}\n"
		scene.write(t, profile.File, foreign, 0o644)
		changed, _ := newFixer(scene.opts).fix(context.Background(), report, scene.opts)
		if changed || scene.read(profile.File) != foreign || scene.argv() != "" ||
			!strings.Contains(scene.stderr.String(), "exists and was not written by bwrapkit") ||
			!strings.Contains(scene.stderr.String(), "to do it by hand, run:\n    printf") {
			t.Errorf("changed %v, file %q, argv %q\n%s", changed, scene.read(profile.File), scene.argv(), scene.stderr.String())
		}
	})
	t.Run("a symlink where the profile goes", func(t *testing.T) {
		scene := newFixScene(t, 0)
		os.Symlink("/etc/passwd", filepath.Join(scene.root, profile.File))
		if changed, _ := newFixer(scene.opts).fix(context.Background(), report, scene.opts); changed ||
			!strings.Contains(scene.stderr.String(), "is not a regular file") {
			t.Errorf("changed %v\n%s", changed, scene.stderr.String())
		}
	})
	t.Run("apparmor_parser refuses the profile", func(t *testing.T) {
		scene := newFixScene(t, 0)
		scene.standIn(t, "apparmor_parser", 1)
		changed, _ := newFixer(scene.opts).fix(context.Background(), report, scene.opts)
		if _, err := os.Lstat(filepath.Join(scene.root, profile.File)); changed || err == nil ||
			!strings.Contains(scene.stderr.String(), "so bwrapkit removed it again") {
			t.Errorf("changed %v, profile left: %v\n%s", changed, err == nil, scene.stderr.String())
		}
	})
	t.Run("no apparmor_parser: written, and the load printed", func(t *testing.T) {
		scene := newFixScene(t, 0)
		os.Remove(filepath.Join(scene.bin, "apparmor_parser"))
		changed, _ := newFixer(scene.opts).fix(context.Background(), report, scene.opts)
		if !changed || scene.read(profile.File) != profile.Content || !strings.Contains(scene.stderr.String(), "\n    apparmor_parser -r "+profile.File+"\n") {
			t.Errorf("changed %v\n%s", changed, scene.stderr.String())
		}
	})
	t.Run("no sysctl: the knob is written directly", func(t *testing.T) {
		scene := newFixScene(t, 0)
		os.Remove(filepath.Join(scene.bin, "sysctl"))
		changed, _ := newFixer(scene.opts).fix(context.Background(), brokenReport(), scene.opts)
		if !changed || scene.read(fixKnob) != "15000\n" || !strings.Contains(scene.read(fixDropIn), "user.max_user_namespaces = 15000\n") {
			t.Errorf("changed %v, knob %q\n%s", changed, scene.read(fixKnob), scene.stderr.String())
		}
	})
	t.Run("a setuid bwrap that is not ours stays setuid", func(t *testing.T) {
		scene := newFixScene(t, 0)
		scene.opts.global.Home = "/elsewhere"
		newFixer(scene.opts).fix(context.Background(), brokenReport(), scene.opts)
		if info, _ := os.Stat(filepath.Join(scene.root, fixManaged)); info.Mode()&fs.ModeSetuid == 0 ||
			!strings.Contains(scene.stderr.String(), "not bwrapkit's own install") {
			t.Errorf("mode %v\n%s", info.Mode(), scene.stderr.String())
		}
	})
}

func TestDoctorFixNothingToDo(t *testing.T) {
	scene := newFixScene(t, 0)
	report := doctor.Report{Checks: []doctor.Check{{ID: "launch", Status: doctor.StatusFail, Summary: "nested"}}}
	if changed, _ := newFixer(scene.opts).fix(context.Background(), report, scene.opts); changed ||
		scene.stderr.String() != "bwrapkit: fix: nothing --fix can change; no automatic fix for launch: see the remedies in the report\n" {
		t.Errorf("changed %v, stderr %q", changed, scene.stderr.String())
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
		opts.probe = doctor.ProbeCommand{Command: []string{builtBinary, probeCommandName}}
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
	return fixEnv{Artifact: pin, Geteuid: func() int { return 65534 }}
}

// cachedPin is the built-in pin served from the directory holding the real static build.
func cachedPin(t *testing.T) install.Artifact {
	t.Helper()
	livetest.SystemBwrap(t) // a host where sandboxes run at all
	if runtime.GOARCH != "amd64" {
		livetest.Skip(t, "the cached static bwrap is built for amd64")
	}
	cache := filepath.Join(livetest.RepoRoot(), ".cache", "bwraps")
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
	got := doctorRun{args: []string{"--fix"}, home: home,
		environ: []string{"PATH=" + path, "HOME=" + t.TempDir()}, env: livePinEnv(pin)}.run(t)
	installed, _ := filepath.EvalSymlinks(filepath.Join(home, "bin", "bwrap"))
	impostor, _ := filepath.EvalSymlinks("/bin/true")
	if got.status != 1 || installed == "" || !strings.Contains(got.stdout, "✗ bwrap.features") || strings.Contains(got.stdout, "bwrapkit: fix:") ||
		!strings.Contains(got.stderr, "bwrapkit: fix: the installed "+installed+" is not the bwrap in use: "+impostor+" (from path) comes first") {
		t.Errorf("status %d, installed %q\nstdout:\n%s\nstderr:\n%s", got.status, installed, got.stdout, got.stderr)
	}
}
