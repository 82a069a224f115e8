package fix

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/doctor/remedy"
	"github.com/bwrapkit/bwrapkit/doctor/report"
)

// planReport is a report whose checks carry the fixes the diagnosis really produces.
func planReport(checks ...report.Check) report.Report {
	return report.Report{Status: report.Overall(checks), Checks: checks}
}

func TestPlanFixes(t *testing.T) {
	const system = "/usr/bin/bwrap"
	const home = "/home/dev/.local/share/bwrapkit"
	managed := home + "/versions/253c70372599ac19/bwrap"
	check := func(id string, status report.Status, fix *remedy.Fix) report.Check {
		return report.Check{ID: id, Status: status, Fix: fix}
	}
	installFix := &remedy.Fix{Kind: remedy.Install, Commands: []string{"bwrapkit install"}}
	usernsOK := report.Check{ID: "userns", Status: report.StatusOK}
	usernsFail := report.Check{ID: "userns", Status: report.StatusFail}

	type want struct {
		kind     remedy.Kind
		apply    bool
		checks   string
		commands []string // each must appear among the action's commands
		reason   string
	}
	for _, tc := range []struct {
		name   string
		root   bool
		report report.Report
		want   []want
	}{
		{"no bwrap: install, no root needed", false,
			planReport(report.Check{ID: "bwrap.found", Status: report.StatusFail, Fix: installFix}),
			[]want{{kind: remedy.Install, apply: true, checks: "bwrap.found", commands: []string{"bwrapkit install"}}}},
		{"unusable bwrap: one install for several checks, its other fixes wait", true,
			planReport(check("bwrap.features", report.StatusFail, remedy.InstallFix(system)),
				check("launch", report.StatusFail, remedy.InstallFix(system)),
				check("userns", report.StatusWarn, appArmorFix(system, true))),
			[]want{{kind: remedy.Install, apply: true, checks: "bwrap.features, launch"}}},
		{"old version only warns: left to the user", true,
			planReport(report.Check{ID: "bwrap.version", Status: report.StatusWarn, Fix: installFix}),
			[]want{{kind: remedy.Install, apply: false, checks: "bwrap.version", commands: []string{"bwrapkit install"}, reason: "only a warning"}}},
		{"apparmor as root: one profile for launch and userns", true,
			planReport(check("userns", report.StatusWarn, appArmorFix(system, true)), check("launch", report.StatusFail, appArmorFix(system, true))),
			[]want{{kind: remedy.AppArmor, apply: true, checks: "userns, launch",
				commands: []string{"apparmor_parser -r /etc/apparmor.d/bwrapkit-usr.bin.bwrap", "| tee /etc/apparmor.d/bwrapkit-usr.bin.bwrap >/dev/null"}}}},
		{"apparmor without root: printed with sudo", false,
			planReport(check("launch", report.StatusFail, appArmorFix(system, false))),
			[]want{{kind: remedy.AppArmor, apply: false, checks: "launch", reason: "need root",
				commands: []string{"sudo apparmor_parser -r /etc/apparmor.d/bwrapkit-usr.bin.bwrap", "'  include if exists <local/bwrapkit-usr.bin.bwrap>'"}}}},
		{"apparmor for a path no profile can name", true,
			planReport(check("launch", report.StatusFail, appArmorFix("/opt/v*/bwrap", true))),
			[]want{{kind: remedy.AppArmor, apply: false, checks: "launch", reason: "pattern"}}},
		{"sysctl as root: both knobs in one drop-in", true,
			planReport(check("userns", report.StatusFail, remedy.SysctlFix(remedy.Sudo(true), system, remedy.SysctlSetting{Key: "user.max_user_namespaces", Value: "15000"})), check("launch", report.StatusFail, remedy.SysctlFix(remedy.Sudo(true), system, remedy.SysctlSetting{Key: "kernel.unprivileged_userns_clone", Value: "1"}))),
			[]want{{kind: remedy.Sysctl, apply: true, checks: "userns, launch",
				commands: []string{"sysctl -w user.max_user_namespaces=15000", "sysctl -w kernel.unprivileged_userns_clone=1", "tee /etc/sysctl.d/90-bwrapkit-userns.conf"}}}},
		{"sysctl without root: printed with sudo", false,
			planReport(check("userns", report.StatusFail, remedy.SysctlFix(remedy.Sudo(false), system, remedy.SysctlSetting{Key: "kernel.unprivileged_userns_clone", Value: "1"}))),
			[]want{{kind: remedy.Sysctl, apply: false, checks: "userns", reason: "need root",
				commands: []string{"sudo sysctl -w kernel.unprivileged_userns_clone=1", "'# Written by bwrapkit doctor --fix: user namespaces for bwrap.'", "| sudo tee /etc/sysctl.d/90-bwrapkit-userns.conf"}}}},
		{"setuid on our own install as root, userns works", true,
			planReport(check("bwrap.permissions", report.StatusWarn, remedy.RemoveSetuidFix("", managed)), usernsOK),
			[]want{{kind: remedy.RemoveSetuid, apply: true, checks: "bwrap.permissions", commands: []string{"chmod u-s " + managed}}}},
		{"setuid on our own install without root", false,
			planReport(check("bwrap.permissions", report.StatusWarn, remedy.RemoveSetuidFix("sudo ", managed)), usernsOK),
			[]want{{kind: remedy.RemoveSetuid, apply: false, reason: "needs root", commands: []string{"sudo chmod u-s " + managed}}}},
		{"setuid on the system's bwrap: never ours to change", true,
			planReport(check("bwrap.permissions", report.StatusWarn, remedy.RemoveSetuidFix("", system)), usernsOK),
			[]want{{kind: remedy.RemoveSetuid, apply: false, reason: "not bwrapkit's own install", commands: []string{"chmod u-s /usr/bin/bwrap"}}}},
		{"setuid ours, but userns fails: the bit may be what works", true,
			planReport(check("bwrap.permissions", report.StatusWarn, remedy.RemoveSetuidFix("", managed)), usernsFail),
			[]want{{kind: remedy.RemoveSetuid, apply: false, reason: "may be what makes"}}},
		{"setuid ours and refused by bwrap itself: removed whatever userns says", true,
			planReport(check("launch", report.StatusFail, remedy.RemoveSetuidFix("", managed)), usernsFail),
			[]want{{kind: remedy.RemoveSetuid, apply: true, checks: "launch"}}},
		{"healthy: nothing", true, planReport(usernsOK, report.Check{ID: "launch", Status: report.StatusOK}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			actions := Plan(tc.report, Host{Root: tc.root, ManagedHome: home})
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
	report := planReport(
		report.Check{ID: "launch", Status: report.StatusFail, Fix: appArmorFix(bwrap, false)},
		report.Check{ID: "userns", Status: report.StatusFail, Fix: remedy.SysctlFix("sudo ", bwrap, remedy.SysctlSetting{Key: "kernel.unprivileged_userns_clone", Value: "1"})})
	dir := t.TempDir()
	for _, action := range Plan(report, Host{}) {
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
		if action.Kind == remedy.Sysctl {
			want, _ = remedy.SysctlDropIn(action.File, "", action.Settings)
		}
		if string(written) != want || out != "" {
			t.Errorf("%s: the command writes:\n%s\nwant:\n%s", action.Kind, written, want)
		}
	}
}

func TestFixActionKey(t *testing.T) {
	a := Action{Kind: remedy.Sysctl, File: "/f", Settings: []remedy.SysctlSetting{{Key: "a", Value: "1"}}}
	b := a
	b.Settings = []remedy.SysctlSetting{{Key: "a", Value: "2"}}
	if a.Key() == b.Key() || !reflect.DeepEqual(a.Key(), a.Key()) {
		t.Error("keys of different settings collide")
	}
}

func runShell(script string) (string, error) {
	out, err := exec.Command("/bin/sh", "-c", script).Output()
	return string(out), err
}

// appArmorFix is the fix the diagnosis attaches for AppArmor's restriction.
func appArmorFix(bwrap string, root bool) *remedy.Fix {
	profile, err := remedy.NewAppArmorProfile(bwrap)
	if err != nil {
		return &remedy.Fix{Kind: remedy.AppArmor, Bwrap: bwrap}
	}
	return profile.Fix(remedy.Sudo(root))
}
