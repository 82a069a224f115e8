package fix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/remedy"
	"github.com/bwrapkit/bwrapkit/doctor/report"
)

// The effects of `doctor --fix`: Plan decides, a Fixer acts, through a Env so that
// tests can point /etc at a temporary directory and stand in for the tools.

const (
	// maxFixRounds bounds fix-then-check: an install, then the fixes for the bwrap it
	// installed (an AppArmor profile for its path, say).
	maxFixRounds      = 2
	fixCommandTimeout = time.Minute // apparmor_parser compiles a profile; sysctl is instant
)

// Env is what a Fixer acts through. Zero Root, Geteuid, LookPath and RunCommand mean
// the real host; the caller supplies Home and Install, which are bwrapkit's and not the
// host's.
type Env struct {
	// Root is the host's "/": the plan's host paths are joined to it. The install is not
	// rooted: it goes to bwrapkit's home, as `bwrapkit install` does.
	Root       string
	Geteuid    func() int
	LookPath   func(name string) (string, error)
	RunCommand func(ctx context.Context, name string, args ...string) error
	// Home is bwrapkit's home for this user, absolute, as a host path; "" when it cannot
	// be told. Only a bwrap under it is bwrapkit's own, the one --fix may remove setuid from.
	Home string
	// Install installs bwrapkit's pinned bwrap into Home, as `bwrapkit install` does,
	// narrating through say. A callback, so that doctor does not depend on the installer.
	Install func(ctx context.Context, say func(format string, args ...any)) (Installed, error)
	// Err receives the narrative: stdout carries only the report. Nil discards it.
	Err io.Writer
}

// Installed is what the install fix put in place.
type Installed struct {
	Path    string // the managed bwrap
	Changed bool   // false when that bwrap was already installed
}

func (e Env) withDefaults() Env {
	if e.Root == "" {
		e.Root = "/"
	}
	if e.Geteuid == nil {
		e.Geteuid = os.Geteuid
	}
	if e.LookPath == nil {
		e.LookPath = ToolPath(os.Getenv("PATH"))
	}
	if e.RunCommand == nil {
		e.RunCommand = RunTool
	}
	if e.Install == nil {
		e.Install = func(context.Context, func(string, ...any)) (Installed, error) {
			return Installed{}, errors.New("this fixer cannot install")
		}
	}
	if e.Err == nil {
		e.Err = io.Discard
	}
	return e
}

// Fixer applies the plans of `doctor --fix` round after round, each action at most once
// per invocation, and narrates on Err as "bwrapkit: fix: " lines.
type Fixer struct {
	env       Env
	done      map[string]bool
	rounds    int
	installed string // the bwrap the install fix put in place, symlinks resolved
}

// New is a Fixer acting through env.
func New(env Env) *Fixer {
	return &Fixer{env: env.withDefaults(), done: map[string]bool{}}
}

// Run fixes what r allows and runs the checks again with check, as long as a round changed
// something and at most maxFixRounds times, and returns the last report: the one to print
// and to take the exit status from. Only running the checks fails it; a failed fix is
// narrated, and the checks that still fail say the rest.
func (f *Fixer) Run(ctx context.Context, check func(context.Context) (report.Report, error), r report.Report) (report.Report, error) {
	for round := 1; round <= maxFixRounds && ctx.Err() == nil; round++ {
		if !f.fix(ctx, r) || ctx.Err() != nil {
			break
		}
		f.say("running the checks again")
		var err error
		if r, err = check(ctx); err != nil {
			return report.Report{}, err
		}
	}
	return r, nil
}

func (f *Fixer) say(format string, args ...any) {
	fmt.Fprintf(f.env.Err, "bwrapkit: fix: "+format+"\n", args...)
}

// fix is one round: it applies what the plan for this report allows and prints the rest,
// and says whether anything changed, so the checks are worth running again.
func (f *Fixer) fix(ctx context.Context, r report.Report) bool {
	f.rounds++
	f.noteShadowedInstall(r)
	host := Host{Root: f.env.Geteuid() == 0, ManagedHome: f.managedHome()}
	var fresh []Action
	for _, action := range Plan(r, host) {
		if !f.done[action.Key()] {
			f.done[action.Key()] = true
			fresh = append(fresh, action)
		}
	}
	if len(fresh) == 0 && f.rounds == 1 {
		f.sayNothingToDo(r)
	}
	changed := false
	for _, action := range fresh {
		if ctx.Err() != nil {
			break
		}
		if !action.Apply {
			f.leave(action)
			continue
		}
		did, err := f.apply(ctx, action)
		if err != nil {
			f.say("failed: %s: %v", action.Summary, err)
			f.printCommands("to do it by hand, run:", action.Commands)
		}
		changed = changed || did
	}
	return changed
}

func (f *Fixer) sayNothingToDo(r report.Report) {
	var unfixable []string
	for _, check := range r.Checks {
		if check.Status == report.StatusFail && check.Fix == nil {
			unfixable = append(unfixable, check.ID)
		}
	}
	if len(unfixable) > 0 {
		f.say("nothing --fix can change; no automatic fix for %s: see the remedies in the report", strings.Join(unfixable, ", "))
		return
	}
	f.say("nothing to fix")
}

// leave prints an action the fixer may not or will not apply, with its commands.
func (f *Fixer) leave(action Action) {
	f.say("not applied: %s (%s): %s", action.Summary, strings.Join(action.Checks, ", "), action.Reason)
	f.printCommands("to apply it, run:", action.Commands)
}

// printCommands indents commands without the prefix, so they can be pasted as they are.
func (f *Fixer) printCommands(intro string, commands []string) {
	if len(commands) == 0 {
		return
	}
	f.say("%s", intro)
	for _, command := range commands {
		fmt.Fprintf(f.env.Err, "    %s\n", command)
	}
}

func (f *Fixer) apply(ctx context.Context, action Action) (bool, error) {
	switch action.Kind {
	case remedy.Install:
		return f.install(ctx)
	case remedy.AppArmor:
		return f.appArmorProfile(ctx, action)
	case remedy.Sysctl:
		return f.sysctl(ctx, action)
	case remedy.RemoveSetuid:
		return f.removeSetuid(action)
	}
	return false, fmt.Errorf("unknown fix kind %q", action.Kind)
}

// rooted is a host path under the fix's root.
func (f *Fixer) rooted(hostPath string) string { return filepath.Join(f.env.Root, hostPath) }

// runBounded runs a tool with the fix's time bound, however the runner is implemented.
func (f *Fixer) runBounded(ctx context.Context, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, fixCommandTimeout)
	defer cancel()
	if err := f.env.RunCommand(ctx, name, args...); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// managedHome is bwrapkit's home as a host path, symlinks resolved (under the fix's root)
// where it exists: planning compares it with the symlink-resolved path of the bwrap in use.
func (f *Fixer) managedHome() string {
	home := f.env.Home
	if home == "" {
		return ""
	}
	real, err := filepath.EvalSymlinks(f.rooted(home))
	if err != nil {
		return home
	}
	root, err := filepath.EvalSymlinks(f.env.Root)
	if err != nil {
		return home
	}
	inRoot, err := filepath.Rel(root, real)
	if err != nil || inRoot == ".." || strings.HasPrefix(inRoot, "../") {
		return home
	}
	return filepath.Join("/", inRoot)
}

func (f *Fixer) install(ctx context.Context) (bool, error) {
	installed, err := f.env.Install(ctx, f.say)
	if err != nil {
		return false, err
	}
	f.installed = installed.Path
	if real, err := filepath.EvalSymlinks(installed.Path); err == nil {
		f.installed = real
	}
	return installed.Changed, nil
}

// noteShadowedInstall says when the bwrap just installed is not the one in use: bwrapkit
// picks --bwrap, BWRAPKIT_BWRAP and PATH before its own install.
func (f *Fixer) noteShadowedInstall(r report.Report) {
	if f.installed == "" || r.Bwrap.Path == "" || r.Bwrap.Path == f.installed {
		return
	}
	f.say("the installed %s is not the bwrap in use: %s (from %s) comes first; pass --bwrap %s or set BWRAPKIT_BWRAP=%s, or remove the other one",
		f.installed, r.Bwrap.Path, r.Bwrap.Source, f.installed, f.installed)
}
