package fix

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/doctor/remedy"
	"github.com/bwrapkit/bwrapkit/doctor/report"
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

// fixScene is a temporary host root and what a fixer acting on it needs.
type fixScene struct {
	root, bin, log string
	stderr         bytes.Buffer
	env            Env
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
	scene.env = Env{Root: scene.root, Geteuid: func() int { return euid }, LookPath: lookPathIn(scene.bin),
		RunCommand: RunTool, Home: fixHome, Err: &scene.stderr}
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
	if err := livetest.WriteProgram(filepath.Join(s.bin, name), []byte(script), 0o755); err != nil {
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
func brokenReport() report.Report {
	return report.Report{Status: report.StatusFail,
		Bwrap: report.BwrapInfo{Path: fixManaged, Source: "managed"},
		Checks: []report.Check{
			{ID: "bwrap.features", Status: report.StatusFail, Fix: &remedy.Fix{Kind: remedy.RemoveSetuid, Bwrap: fixManaged,
				Commands: []string{"chmod u-s " + fixManaged}}},
			{ID: "userns", Status: report.StatusFail, Fix: &remedy.Fix{Kind: remedy.Sysctl, Bwrap: fixManaged, File: fixDropIn,
				Content: "user.max_user_namespaces = 15000\n"}},
			{ID: "launch", Status: report.StatusFail, Fix: &remedy.Fix{Kind: remedy.AppArmor, Bwrap: fixManaged}},
			{ID: "selftest.network", Status: report.StatusSkip},
		}}
}

func TestFixWithoutRootChangesNothing(t *testing.T) {
	scene := newFixScene(t, 1000)
	ran := 0
	scene.env.RunCommand = func(context.Context, string, ...string) error { ran++; return nil }
	before := scene.tree(t)
	changed := New(scene.env).fix(context.Background(), brokenReport())
	if changed || ran != 0 {
		t.Fatalf("changed %v, %d commands run", changed, ran)
	}
	if after := scene.tree(t); after != before {
		t.Errorf("the root changed:\n%s\nwas:\n%s", after, before)
	}
	profile, _ := remedy.NewAppArmorProfile(fixManaged)
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
}

func TestFixAsRoot(t *testing.T) {
	scene := newFixScene(t, 0)
	fix := New(scene.env)
	changed := fix.fix(context.Background(), brokenReport())
	if !changed {
		t.Fatalf("changed %v\n%s", changed, scene.stderr.String())
	}
	profile, _ := remedy.NewAppArmorProfile(fixManaged)
	if got := scene.read(profile.File); got != profile.Content {
		t.Errorf("profile:\n%s\nwant:\n%s", got, profile.Content)
	}
	wantDropIn, _ := remedy.SysctlDropIn(fixDropIn, "", []remedy.SysctlSetting{{Key: "user.max_user_namespaces", Value: "15000"}})
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
	if strings.Contains(narrative, "not applied") || strings.Contains(narrative, "sudo") {
		t.Errorf("stderr:\n%s", narrative)
	}

	// The next round (after the checks ran again) repeats nothing.
	scene.stderr.Reset()
	if changed := fix.fix(context.Background(), brokenReport()); changed || scene.stderr.Len() != 0 || scene.argv() != wantArgv {
		t.Errorf("second round: changed %v, stderr %q, argv %q", changed, scene.stderr.String(), scene.argv())
	}
}

func TestFixAsRootRefusesAndRollsBack(t *testing.T) {
	profile, _ := remedy.NewAppArmorProfile(fixManaged)
	report := report.Report{Checks: []report.Check{{ID: "launch", Status: report.StatusFail,
		Fix: &remedy.Fix{Kind: remedy.AppArmor, Bwrap: fixManaged}}}}

	t.Run("a profile file we did not write", func(t *testing.T) {
		scene := newFixScene(t, 0)
		foreign := "profile mine " + fixManaged + " {\n}\n"
		scene.write(t, profile.File, foreign, 0o644)
		changed := New(scene.env).fix(context.Background(), report)
		if changed || scene.read(profile.File) != foreign || scene.argv() != "" ||
			!strings.Contains(scene.stderr.String(), "exists and was not written by bwrapkit") ||
			!strings.Contains(scene.stderr.String(), "to do it by hand, run:\n    printf") {
			t.Errorf("changed %v, file %q, argv %q\n%s", changed, scene.read(profile.File), scene.argv(), scene.stderr.String())
		}
	})
	t.Run("a symlink where the profile goes", func(t *testing.T) {
		scene := newFixScene(t, 0)
		os.Symlink("/etc/passwd", filepath.Join(scene.root, profile.File))
		if changed := New(scene.env).fix(context.Background(), report); changed ||
			!strings.Contains(scene.stderr.String(), "is not a regular file") {
			t.Errorf("changed %v\n%s", changed, scene.stderr.String())
		}
	})
	t.Run("apparmor_parser refuses the profile", func(t *testing.T) {
		scene := newFixScene(t, 0)
		scene.standIn(t, "apparmor_parser", 1)
		changed := New(scene.env).fix(context.Background(), report)
		if _, err := os.Lstat(filepath.Join(scene.root, profile.File)); changed || err == nil ||
			!strings.Contains(scene.stderr.String(), "so bwrapkit removed it again") {
			t.Errorf("changed %v, profile left: %v\n%s", changed, err == nil, scene.stderr.String())
		}
	})
	t.Run("no apparmor_parser: written, and the load printed", func(t *testing.T) {
		scene := newFixScene(t, 0)
		os.Remove(filepath.Join(scene.bin, "apparmor_parser"))
		changed := New(scene.env).fix(context.Background(), report)
		if !changed || scene.read(profile.File) != profile.Content || !strings.Contains(scene.stderr.String(), "\n    apparmor_parser -r "+profile.File+"\n") {
			t.Errorf("changed %v\n%s", changed, scene.stderr.String())
		}
	})
	t.Run("no sysctl: the knob is written directly", func(t *testing.T) {
		scene := newFixScene(t, 0)
		os.Remove(filepath.Join(scene.bin, "sysctl"))
		changed := New(scene.env).fix(context.Background(), brokenReport())
		if !changed || scene.read(fixKnob) != "15000\n" || !strings.Contains(scene.read(fixDropIn), "user.max_user_namespaces = 15000\n") {
			t.Errorf("changed %v, knob %q\n%s", changed, scene.read(fixKnob), scene.stderr.String())
		}
	})
	t.Run("a setuid bwrap that is not ours stays setuid", func(t *testing.T) {
		scene := newFixScene(t, 0)
		scene.env.Home = "/elsewhere"
		New(scene.env).fix(context.Background(), brokenReport())
		if info, _ := os.Stat(filepath.Join(scene.root, fixManaged)); info.Mode()&fs.ModeSetuid == 0 ||
			!strings.Contains(scene.stderr.String(), "not bwrapkit's own install") {
			t.Errorf("mode %v\n%s", info.Mode(), scene.stderr.String())
		}
	})
}

func TestFixNothingToDo(t *testing.T) {
	scene := newFixScene(t, 0)
	report := report.Report{Checks: []report.Check{{ID: "launch", Status: report.StatusFail, Summary: "nested"}}}
	if changed := New(scene.env).fix(context.Background(), report); changed ||
		scene.stderr.String() != "bwrapkit: fix: nothing --fix can change; no automatic fix for launch: see the remedies in the report\n" {
		t.Errorf("changed %v, stderr %q", changed, scene.stderr.String())
	}
}
