package doctor

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/platform"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/doctor golden files")

func TestAppArmorProfileGolden(t *testing.T) {
	for _, tc := range []struct{ golden, path, file string }{
		{"usr-bin-bwrap", "/usr/bin/bwrap", "/etc/apparmor.d/bwrapkit-usr.bin.bwrap"},
		{"path-with-spaces", "/opt/my tools/bwrap", "/etc/apparmor.d/bwrapkit-opt.my_tools.bwrap"},
		{"managed-install", "/home/dev/.local/share/bwrapkit/versions/253c70372599ac19/bwrap",
			"/etc/apparmor.d/bwrapkit-home.dev..local.share.bwrapkit.versions.253c70372599ac19.bwrap"},
		{"unusual-characters", "/srv/a,b!c#d @e+f/bwrap", "/etc/apparmor.d/bwrapkit-srv.a_b_c_d__e_f.bwrap"},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			profile, err := NewAppArmorProfile(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if profile.File != tc.file || "/etc/apparmor.d/"+profile.Name != profile.File {
				t.Errorf("file %s, name %s; want %s", profile.File, profile.Name, tc.file)
			}
			golden := filepath.Join(livetest.RepoRoot(), "testdata", "doctor", "apparmor", tc.golden+".golden")
			if *updateGolden {
				if err := os.WriteFile(golden, []byte(profile.Content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./doctor -run Golden -update)", err)
			}
			if profile.Content != string(want) {
				t.Errorf("profile for %s:\n%s\nwant (%s):\n%s", tc.path, profile.Content, golden, want)
			}
			// The doctor's own profile search must see the grant, or --fix would loop.
			root := fstest.MapFS{strings.TrimPrefix(profile.File, "/"): {Data: []byte(profile.Content)}}
			if found, ok := platform.AppArmorProfileGrantsUserns(root, tc.path); !ok || found != profile.File {
				t.Errorf("AppArmorProfileGrantsUserns does not see the profile for %s: %q %v", tc.path, found, ok)
			}
			if _, ok := platform.AppArmorProfileGrantsUserns(root, tc.path+"2"); ok {
				t.Errorf("the profile for %s also grants another path", tc.path)
			}
		})
	}
}

func TestAppArmorProfileRefusesPatterns(t *testing.T) {
	for _, path := range []string{
		"bin/bwrap", "/usr/bin/../bin/bwrap", "/usr/bin//bwrap", "/opt/a*b/bwrap", "/opt/v?/bwrap",
		"/opt/[x]/bwrap", "/opt/@{HOME}/bwrap", "/opt/^hat/bwrap", `/opt/q"uote/bwrap`, `/opt/back\slash/bwrap`,
		"/opt/new\nline/bwrap", "/opt/\xff/bwrap",
	} {
		if profile, err := NewAppArmorProfile(path); err == nil {
			t.Errorf("%q: accepted:\n%s", path, profile.Content)
		}
	}
}

func TestAppArmorProfileLongPath(t *testing.T) {
	long := "/" + strings.Repeat("very-long-directory-name/", 20) + "bwrap"
	profile, err := NewAppArmorProfile(long)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewAppArmorProfile(strings.Replace(long, "very", "VERY", 1)[:len(long)-5] + "bwrap2")
	if len(profile.Name) > maxProfileName || profile.Name == other.Name || !strings.HasPrefix(profile.Name, "bwrapkit-very-long") {
		t.Errorf("names %q (%d), %q", profile.Name, len(profile.Name), other.Name)
	}
}

func TestAppArmorProfileCheckExisting(t *testing.T) {
	profile, _ := NewAppArmorProfile("/usr/bin/bwrap")
	other, _ := NewAppArmorProfile("/usr/bin/bwrap2")
	for _, tc := range []struct {
		name, existing, wantErr string
	}{
		{"ours", profile.Content, ""},
		{"ours, edited below the mark", appArmorMark + "/usr/bin/bwrap\nprofile x {}\n", ""},
		{"ours for another path", other.Content, "for another bwrap, /usr/bin/bwrap2"},
		{"a distribution's", "abi <abi/4.0>,\nprofile bwrap /usr/bin/bwrap flags=(unconfined) {\n  userns,\n}\n", "not written by bwrapkit"},
		{"the mark further down", "# mine\n" + profile.Content, "not written by bwrapkit"},
		{"empty", "", "not written by bwrapkit"},
	} {
		err := profile.CheckExisting(tc.existing)
		if (tc.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestSysctlDropIn(t *testing.T) {
	const file = "/etc/sysctl.d/90-bwrapkit-userns.conf"
	clone := SysctlSetting{"kernel.unprivileged_userns_clone", "1"}
	limit := SysctlSetting{"user.max_user_namespaces", "15000"}
	fresh, err := SysctlDropIn(file, "", []SysctlSetting{clone})
	want := "# Written by bwrapkit doctor --fix: user namespaces for bwrap.\n" +
		"# Undo: rm " + file + ", then set each knob back with sysctl -w (or reboot).\n" +
		"kernel.unprivileged_userns_clone = 1\n"
	if err != nil || fresh != want {
		t.Fatalf("%v\n%s", err, fresh)
	}
	merged, err := SysctlDropIn(file, fresh, []SysctlSetting{limit, {"kernel.unprivileged_userns_clone", "1"}})
	if err != nil || !strings.HasSuffix(merged, "kernel.unprivileged_userns_clone = 1\nuser.max_user_namespaces = 15000\n") {
		t.Errorf("merge: %v\n%s", err, merged)
	}
	if _, err := SysctlDropIn(file, "kernel.unprivileged_userns_clone = 0\n", []SysctlSetting{clone}); err == nil ||
		!strings.Contains(err.Error(), "not written by bwrapkit") {
		t.Errorf("a foreign file: %v", err)
	}
	if _, err := parseSysctlSettings("user.max_user_namespaces = 1; rm -rf /\n"); err == nil {
		t.Error("a value that is not a number was accepted")
	}
}

// planReport is a report whose checks carry the fixes the diagnosis really produces.
func planReport(checks ...Check) Report {
	return Report{Status: overall(checks), Checks: checks}
}

func TestPlanFixes(t *testing.T) {
	const system = "/usr/bin/bwrap"
	const home = "/home/dev/.local/share/bwrapkit"
	managed := home + "/versions/253c70372599ac19/bwrap"
	facts := func(bwrap string, root bool) Facts {
		host := linuxHost()
		host.MaxUserNamespaces = knob(0)
		host.UnprivilegedUsernsClone = knob(0)
		return Facts{Host: host, Bwrap: bwrap, Root: root, Reason: sandbox.ReasonSetupFailed}
	}
	check := func(id string, status Status, diagnosis Diagnosis) Check {
		return Check{ID: id, Status: status, Summary: diagnosis.Summary, Remedy: diagnosis.Remedy, Fix: diagnosis.Fix}
	}
	installFix := &Fix{Kind: FixInstall, Commands: []string{"bwrapkit install"}}
	usernsOK := Check{ID: "userns", Status: StatusOK}
	usernsFail := Check{ID: "userns", Status: StatusFail}

	type want struct {
		kind     FixKind
		apply    bool
		checks   string
		commands []string // each must appear among the action's commands
		reason   string
	}
	for _, tc := range []struct {
		name   string
		root   bool
		report Report
		want   []want
	}{
		{"no bwrap: install, no root needed", false,
			planReport(Check{ID: "bwrap.found", Status: StatusFail, Fix: installFix}),
			[]want{{kind: FixInstall, apply: true, checks: "bwrap.found", commands: []string{"bwrapkit install"}}}},
		{"unusable bwrap: one install for several checks, its other fixes wait", true,
			planReport(check("bwrap.features", StatusFail, notBwrap(facts(system, true))),
				check("launch", StatusFail, notBwrap(facts(system, true))),
				check("userns", StatusWarn, appArmor(facts(system, true)))),
			[]want{{kind: FixInstall, apply: true, checks: "bwrap.features, launch"}}},
		{"old version only warns: left to the user", true,
			planReport(Check{ID: "bwrap.version", Status: StatusWarn, Fix: installFix}),
			[]want{{kind: FixInstall, apply: false, checks: "bwrap.version", commands: []string{"bwrapkit install"}, reason: "only a warning"}}},
		{"apparmor as root: one profile for launch and userns", true,
			planReport(check("userns", StatusWarn, appArmor(facts(system, true))), check("launch", StatusFail, appArmor(facts(system, true)))),
			[]want{{kind: FixAppArmorProfile, apply: true, checks: "userns, launch",
				commands: []string{"apparmor_parser -r /etc/apparmor.d/bwrapkit-usr.bin.bwrap", "| tee /etc/apparmor.d/bwrapkit-usr.bin.bwrap >/dev/null"}}}},
		{"apparmor without root: printed with sudo", false,
			planReport(check("launch", StatusFail, appArmor(facts(system, false)))),
			[]want{{kind: FixAppArmorProfile, apply: false, checks: "launch", reason: "need root",
				commands: []string{"sudo apparmor_parser -r /etc/apparmor.d/bwrapkit-usr.bin.bwrap", "'  include if exists <local/bwrapkit-usr.bin.bwrap>'"}}}},
		{"apparmor for a path no profile can name", true,
			planReport(check("launch", StatusFail, appArmor(facts("/opt/v*/bwrap", true)))),
			[]want{{kind: FixAppArmorProfile, apply: false, checks: "launch", reason: "pattern"}}},
		{"sysctl as root: both knobs in one drop-in", true,
			planReport(check("userns", StatusFail, usernsLimit(facts(system, true), "")), check("launch", StatusFail, unprivilegedClone(facts(system, true), ""))),
			[]want{{kind: FixSysctl, apply: true, checks: "userns, launch",
				commands: []string{"sysctl -w user.max_user_namespaces=15000", "sysctl -w kernel.unprivileged_userns_clone=1", "tee /etc/sysctl.d/90-bwrapkit-userns.conf"}}}},
		{"sysctl without root: printed with sudo", false,
			planReport(check("userns", StatusFail, unprivilegedClone(facts(system, false), ""))),
			[]want{{kind: FixSysctl, apply: false, checks: "userns", reason: "need root",
				commands: []string{"sudo sysctl -w kernel.unprivileged_userns_clone=1", "'# Written by bwrapkit doctor --fix: user namespaces for bwrap.'", "| sudo tee /etc/sysctl.d/90-bwrapkit-userns.conf"}}}},
		{"setuid on our own install as root, userns works", true,
			planReport(check("bwrap.permissions", StatusWarn, Diagnosis{Fix: permissionsVerdict(managed, binaryFacts{Setuid: true}, "").Fix}), usernsOK),
			[]want{{kind: FixRemoveSetuid, apply: true, checks: "bwrap.permissions", commands: []string{"chmod u-s " + managed}}}},
		{"setuid on our own install without root", false,
			planReport(check("bwrap.permissions", StatusWarn, Diagnosis{Fix: permissionsVerdict(managed, binaryFacts{Setuid: true}, "sudo ").Fix}), usernsOK),
			[]want{{kind: FixRemoveSetuid, apply: false, reason: "needs root", commands: []string{"sudo chmod u-s " + managed}}}},
		{"setuid on the system's bwrap: never ours to change", true,
			planReport(check("bwrap.permissions", StatusWarn, Diagnosis{Fix: permissionsVerdict(system, binaryFacts{Setuid: true}, "").Fix}), usernsOK),
			[]want{{kind: FixRemoveSetuid, apply: false, reason: "not bwrapkit's own install", commands: []string{"chmod u-s /usr/bin/bwrap"}}}},
		{"setuid ours, but userns fails: the bit may be what works", true,
			planReport(check("bwrap.permissions", StatusWarn, Diagnosis{Fix: permissionsVerdict(managed, binaryFacts{Setuid: true}, "").Fix}), usernsFail),
			[]want{{kind: FixRemoveSetuid, apply: false, reason: "may be what makes"}}},
		{"setuid ours and refused by bwrap itself: removed whatever userns says", true,
			planReport(check("launch", StatusFail, setuidUnsupported(Facts{Bwrap: managed, Root: true}, "")), usernsFail),
			[]want{{kind: FixRemoveSetuid, apply: true, checks: "launch"}}},
		{"healthy: nothing", true, planReport(usernsOK, Check{ID: "launch", Status: StatusOK}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			actions := PlanFixes(tc.report, FixHost{Root: tc.root, ManagedHome: home})
			if len(actions) != len(tc.want) {
				t.Fatalf("%d actions, want %d: %+v", len(actions), len(tc.want), actions)
			}
			for i, want := range tc.want {
				got := actions[i]
				if got.Kind != want.kind || got.Apply != want.apply || (want.checks != "" && strings.Join(got.Checks, ", ") != want.checks) {
					t.Errorf("action %d: kind %s apply %v checks %v; want %+v", i, got.Kind, got.Apply, got.Checks, want)
				}
				if got.Summary == "" || got.Apply != (got.Reason == "") || !strings.Contains(got.Reason, want.reason) {
					t.Errorf("action %d: summary %q, reason %q; want reason %q", i, got.Summary, got.Reason, want.reason)
				}
				for _, command := range want.commands {
					if !strings.Contains(strings.Join(got.Commands, "\n"), command) {
						t.Errorf("action %d: commands lack %q:\n%s", i, command, strings.Join(got.Commands, "\n"))
					}
				}
				if tc.root && strings.Contains(strings.Join(got.Commands, "\n"), "sudo ") {
					t.Errorf("action %d: sudo in commands for root: %v", i, got.Commands)
				}
			}
		})
	}
}

// The printed commands write exactly what --fix would write, so a later --fix owns the file.
func TestPlanFixesCommandsWriteTheSameFiles(t *testing.T) {
	bwrap := "/opt/my tools/bwrap"
	host := linuxHost()
	host.UnprivilegedUsernsClone = knob(0)
	report := planReport(
		Check{ID: "launch", Status: StatusFail, Fix: appArmor(Facts{Host: host, Bwrap: bwrap}).Fix},
		Check{ID: "userns", Status: StatusFail, Fix: unprivilegedClone(Facts{Host: host, Bwrap: bwrap}, "").Fix})
	dir := t.TempDir()
	for _, action := range PlanFixes(report, FixHost{}) {
		var printed string
		for _, command := range action.Commands {
			if strings.HasPrefix(command, "printf ") {
				printed = command
			}
		}
		script := strings.Replace(strings.Replace(printed, "| sudo ", "| ", 1), "tee "+action.File, "tee "+filepath.Join(dir, "out"), 1)
		out, err := runShell(script)
		if err != nil {
			t.Fatalf("%s: %v", script, err)
		}
		written, _ := os.ReadFile(filepath.Join(dir, "out"))
		want := action.Content
		if action.Kind == FixSysctl {
			want, _ = SysctlDropIn(action.File, "", action.Settings)
		}
		if string(written) != want || out != "" {
			t.Errorf("%s: the command writes:\n%s\nwant:\n%s", action.Kind, written, want)
		}
	}
}

func TestFixActionKey(t *testing.T) {
	a := FixAction{Kind: FixSysctl, File: "/f", Settings: []SysctlSetting{{"a", "1"}}}
	b := a
	b.Settings = []SysctlSetting{{"a", "2"}}
	if a.Key() == b.Key() || !reflect.DeepEqual(a.Key(), a.Key()) {
		t.Error("keys of different settings collide")
	}
}

func runShell(script string) (string, error) {
	out, err := exec.Command("/bin/sh", "-c", script).Output()
	return string(out), err
}
