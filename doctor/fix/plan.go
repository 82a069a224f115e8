// Package fix is `doctor --fix`: Plan decides, purely, which of a report's remedies to apply
// and which to leave to the user; a Fixer applies them through an Env and checks again.
package fix

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/bwrapkit/bwrapkit/doctor/remedy"
	"github.com/bwrapkit/bwrapkit/doctor/report"
)

// Planning for `doctor --fix`: which of a report's remedies to apply and which to leave to
// the user, as a pure function of the report and of who runs it. Applying is the caller's.

// Host is what planning needs to know about the fixer.
type Host struct {
	Root bool // effective uid 0: host files, kernel knobs and file modes may be changed
	// ManagedHome is bwrapkit's home, symlink-resolved: a bwrap under its versions
	// directory is bwrapkit's own install, the only one --fix changes the mode of.
	ManagedHome string
}

// Action is one step of `doctor --fix`.
type Action struct {
	Kind    remedy.Kind
	Checks  []string // the checks that asked for it, in report order
	Summary string   // what it does, in a line
	// Apply: the fixer does it. Otherwise Reason says why not, and Commands are what
	// the user can run instead.
	Apply    bool
	Reason   string
	Bwrap    string                 // the bwrap it is for (apparmor-profile, remove-setuid)
	File     string                 // the host file it writes: the AppArmor profile, the sysctl.d drop-in
	Content  string                 // the AppArmor profile's text
	Settings []remedy.SysctlSetting // the knobs a sysctl action sets
	Commands []string               // the same steps for a shell, with sudo when not root
}

// Key identifies an action across runs of the checks, so a fixer does each at most once.
func (a Action) Key() string {
	key := string(a.Kind) + "\x00" + a.Bwrap + "\x00" + a.File
	for _, setting := range a.Settings {
		key += "\x00" + setting.String()
	}
	return key
}

// Plan turns the automatable remedies of the checks that fail or warn into actions:
//   - install: applied when a check fails with it (no bwrap, or one that is not usable); it
//     needs no root, since it installs into bwrapkit's home. A check that only warns (an
//     old version) leaves it to the user: the bwrap in use works.
//   - apparmor-profile, sysctl: applied as root, printed otherwise.
//   - remove-setuid: applied as root only to bwrapkit's own install, and only where the bit
//     is not what makes bwrap work (it fails anyway, or user namespaces work without it).
//
// While an install is planned, the fixes for the bwrap being replaced are left out: they
// are planned again against the report that follows the install.
func Plan(r report.Report, host Host) []Action {
	sudo := remedy.Sudo(host.Root)
	var actions []Action
	add := func(action Action, check string) {
		for i := range actions {
			if actions[i].Key() == action.Key() {
				actions[i].Checks = append(actions[i].Checks, check)
				return
			}
		}
		action.Checks = []string{check}
		actions = append(actions, action)
	}

	installing := false
	var warnedInstall []string
	for _, check := range r.Checks {
		if check.Fix == nil || check.Fix.Kind != remedy.Install {
			continue
		}
		switch check.Status {
		case report.StatusFail:
			installing = true
			add(Action{Kind: remedy.Install, Apply: true, Commands: []string{"bwrapkit install"},
				Summary: "install bwrapkit's pinned static bwrap into its home (as `bwrapkit install` does)"}, check.ID)
		case report.StatusWarn:
			warnedInstall = append(warnedInstall, check.ID)
		}
	}
	if !installing && len(warnedInstall) > 0 {
		actions = append(actions, Action{Kind: remedy.Install, Checks: warnedInstall, Commands: []string{"bwrapkit install"},
			Summary: "install bwrapkit's pinned static bwrap",
			Reason:  "only a warning, and the bwrap in use works; an install adds a bwrap that is used only where none is chosen before it (--bwrap, BWRAPKIT_BWRAP, PATH)"})
	}

	sysctlAt := -1
	for _, check := range r.Checks {
		if check.Fix == nil || (check.Status != report.StatusFail && check.Status != report.StatusWarn) {
			continue
		}
		fix := *check.Fix
		switch fix.Kind {
		case remedy.Sysctl:
			settings, err := remedy.ParseSysctlSettings(fix.Content)
			if err != nil || len(settings) == 0 || fix.File == "" {
				continue
			}
			if sysctlAt < 0 {
				sysctlAt = len(actions)
				actions = append(actions, Action{Kind: remedy.Sysctl, File: fix.File})
			}
			action := &actions[sysctlAt]
			if !slices.Contains(action.Checks, check.ID) {
				action.Checks = append(action.Checks, check.ID)
			}
			for _, setting := range settings {
				if !slices.Contains(action.Settings, setting) {
					action.Settings = append(action.Settings, setting)
				}
			}
		case remedy.AppArmor:
			if installing || fix.Bwrap == "" {
				continue
			}
			add(appArmorAction(fix.Bwrap, host.Root, sudo), check.ID)
		case remedy.RemoveSetuid:
			if installing || fix.Bwrap == "" {
				continue
			}
			add(removeSetuidAction(r, check, fix.Bwrap, host, sudo), check.ID)
		}
	}
	if sysctlAt >= 0 {
		completeSysctl(&actions[sysctlAt], host.Root, sudo)
	}
	return actions
}

func appArmorAction(bwrap string, root bool, sudo string) Action {
	action := Action{Kind: remedy.AppArmor, Bwrap: bwrap,
		Summary: "give " + bwrap + " an AppArmor profile that lets it create user namespaces"}
	profile, err := remedy.NewAppArmorProfile(bwrap)
	if err != nil {
		action.Reason = "no exact profile can name it: " + err.Error()
		return action
	}
	action.Summary += " (" + profile.File + ")"
	action.File, action.Content = profile.File, profile.Content
	action.Commands = profile.Commands(sudo)
	action.Apply = root
	if !root {
		action.Reason = "writing to /etc/apparmor.d and loading a profile need root"
	}
	return action
}

func removeSetuidAction(r report.Report, check report.Check, bwrap string, host Host, sudo string) Action {
	action := Action{Kind: remedy.RemoveSetuid, Bwrap: bwrap, Summary: "remove the setuid bit from " + bwrap,
		Commands: []string{remedy.RemoveSetuidCommand(sudo, bwrap)}}
	managed := host.ManagedHome != "" && strings.HasPrefix(bwrap, filepath.Join(host.ManagedHome, "versions")+"/")
	usernsWorks := slices.ContainsFunc(r.Checks, func(c report.Check) bool { return c.ID == "userns" && c.Status == report.StatusOK })
	switch {
	case !managed:
		action.Reason = "it is not bwrapkit's own install: a package or an administrator made it setuid, and a package update would set the bit again"
	case check.Status != report.StatusFail && !usernsWorks:
		action.Reason = "user namespaces are not shown to work without it here (see userns), so the bit may be what makes this bwrap work"
	case !host.Root:
		action.Reason = "changing the mode of a root-owned file needs root"
	default:
		action.Apply = true
	}
	return action
}

func completeSysctl(action *Action, root bool, sudo string) {
	names := make([]string, len(action.Settings))
	for i, setting := range action.Settings {
		names[i] = setting.String()
	}
	action.Commands = remedy.SysctlCommands(sudo, action.File, action.Settings)
	action.Summary = "set " + strings.Join(names, ", ") + " now and at boot (" + action.File + "), a host-wide change of what the kernel allows unprivileged users"
	action.Apply = root
	if !root {
		action.Reason = "kernel settings need root"
	}
}
