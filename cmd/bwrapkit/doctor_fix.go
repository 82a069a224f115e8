package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/doctor"
	"github.com/bwrapkit/bwrapkit/install"
	"github.com/bwrapkit/bwrapkit/internal/atomicfile"
)

// The effects of `doctor --fix`: doctor.PlanFixes decides, this file acts, through fixEnv
// so that tests can point /etc at a temporary directory and stand in for the tools.

const (
	// maxFixRounds bounds fix-then-check: an install, then the fixes for the bwrap it
	// installed (an AppArmor profile for its path, say).
	maxFixRounds       = 2
	fixInstallTimeout  = 5 * time.Minute // as `bwrapkit install --timeout`
	fixCommandTimeout  = time.Minute     // apparmor_parser compiles a profile; sysctl is instant
	fixCommandMaxBytes = 64 << 10
)

// fixEnv is what doctor --fix acts through. Zero fields mean the real host.
type fixEnv struct {
	// Root is the host's "/": the plan's host paths are joined to it. The install is not
	// rooted: it goes to bwrapkit's home, as `bwrapkit install` does.
	Root       string
	Geteuid    func() int
	LookPath   func(name string) (string, error)
	RunCommand func(ctx context.Context, name string, args ...string) error
	// Artifact is what the install fix installs; zero means the built-in manifest's pin
	// for this machine.
	Artifact       install.Artifact
	InstallTimeout time.Duration
}

func (e fixEnv) withDefaults(s streams) fixEnv {
	if e.Root == "" {
		e.Root = "/"
	}
	if e.Geteuid == nil {
		e.Geteuid = os.Geteuid
	}
	if e.LookPath == nil {
		// Administrators' tools live in sbin, which a user's or a cron job's PATH may lack.
		e.LookPath = lookPathIn(s.Getenv("PATH") + ":/usr/local/sbin:/usr/sbin:/sbin")
	}
	if e.RunCommand == nil {
		e.RunCommand = runFixCommand
	}
	if e.InstallTimeout <= 0 {
		e.InstallTimeout = fixInstallTimeout
	}
	return e
}

// lookPathIn finds an executable regular file in a PATH-style list.
func lookPathIn(pathList string) func(name string) (string, error) {
	return func(name string) (string, error) {
		for _, dir := range filepath.SplitList(pathList) {
			if dir == "" || !filepath.IsAbs(dir) {
				continue
			}
			candidate := filepath.Join(dir, name)
			if info, err := os.Stat(candidate); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
				return candidate, nil
			}
		}
		return "", fmt.Errorf("%s not found in %s", name, pathList)
	}
}

// runFixCommand runs a tool non-interactively: stdin is the null device (exec's default
// for a nil Stdin), its output is kept for the error only, since stdout is the report's.
func runFixCommand(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	var output limitedOutput
	cmd.Stdout, cmd.Stderr = &output, &output
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		said := strings.TrimSpace(output.String())
		if said != "" {
			return fmt.Errorf("%w: %s", err, said)
		}
		return err
	}
	return nil
}

// limitedOutput keeps the first fixCommandMaxBytes of a command's output.
type limitedOutput struct{ bytes.Buffer }

func (l *limitedOutput) Write(p []byte) (int, error) {
	if room := fixCommandMaxBytes - l.Len(); room > 0 {
		l.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// fixer applies plans round after round, each action at most once, and narrates on
// stderr: stdout carries only the report.
type fixer struct {
	env       fixEnv
	opts      *doctorOptions
	done      map[string]bool
	rounds    int
	installed string // the bwrap the install fix put in place, symlinks resolved
}

func newFixer(opts *doctorOptions) *fixer {
	return &fixer{env: opts.fixEnv.withDefaults(opts.streams), opts: opts, done: map[string]bool{}}
}

func (f *fixer) say(format string, args ...any) {
	fmt.Fprintf(f.opts.Err, "bwrapkit: fix: "+format+"\n", args...)
}

// fix is the doctorFixer: it applies what the plan for this report allows and prints the
// rest, and says whether anything changed, so the checks are worth running again.
func (f *fixer) fix(ctx context.Context, report doctor.Report, _ *doctorOptions) (bool, error) {
	f.rounds++
	f.noteShadowedInstall(report)
	host := doctor.FixHost{Root: f.env.Geteuid() == 0, ManagedHome: f.managedHome()}
	var fresh []doctor.FixAction
	for _, action := range doctor.PlanFixes(report, host) {
		if !f.done[action.Key()] {
			f.done[action.Key()] = true
			fresh = append(fresh, action)
		}
	}
	if len(fresh) == 0 && f.rounds == 1 {
		f.sayNothingToDo(report)
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
	return changed, nil
}

func (f *fixer) sayNothingToDo(report doctor.Report) {
	var unfixable []string
	for _, check := range report.Checks {
		if check.Status == doctor.StatusFail && check.Fix == nil {
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
func (f *fixer) leave(action doctor.FixAction) {
	f.say("not applied: %s (%s): %s", action.Summary, strings.Join(action.Checks, ", "), action.Reason)
	f.printCommands("to apply it, run:", action.Commands)
}

// printCommands indents commands without the prefix, so they can be pasted as they are.
func (f *fixer) printCommands(intro string, commands []string) {
	if len(commands) == 0 {
		return
	}
	f.say("%s", intro)
	for _, command := range commands {
		fmt.Fprintf(f.opts.Err, "    %s\n", command)
	}
}

func (f *fixer) apply(ctx context.Context, action doctor.FixAction) (bool, error) {
	switch action.Kind {
	case doctor.FixInstall:
		return f.install(ctx)
	case doctor.FixAppArmorProfile:
		return f.appArmorProfile(ctx, action)
	case doctor.FixSysctl:
		return f.sysctl(ctx, action)
	case doctor.FixRemoveSetuid:
		return f.removeSetuid(action)
	}
	return false, fmt.Errorf("unknown fix kind %q", action.Kind)
}

// rooted is a host path under the fix's root.
func (f *fixer) rooted(hostPath string) string { return filepath.Join(f.env.Root, hostPath) }

// runBounded runs a tool with the fix's time bound, however the runner is implemented.
func (f *fixer) runBounded(ctx context.Context, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, fixCommandTimeout)
	defer cancel()
	if err := f.env.RunCommand(ctx, name, args...); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// managedHome is bwrapkit's home for this user as a host path, symlinks resolved (under
// the fix's root) where it exists.
func (f *fixer) managedHome() string {
	home, err := installHome(&installOptions{streams: f.opts.streams, global: f.opts.global})
	if err != nil {
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

func (f *fixer) install(ctx context.Context) (bool, error) {
	home, err := installHome(&installOptions{streams: f.opts.streams, global: f.opts.global})
	if err != nil {
		return false, err
	}
	artifact := f.env.Artifact
	if artifact.SHA256 == "" {
		if artifact, err = install.Default().Artifact(runtime.GOARCH); err != nil {
			return false, err
		}
	}
	f.say("installing bwrap %s into %s (method auto, at most %s)", artifact.Version, home, f.env.InstallTimeout)
	ctx, cancel := context.WithTimeout(ctx, f.env.InstallTimeout)
	defer cancel()
	result, err := install.Install(ctx, install.Options{
		Home:          home,
		Artifact:      artifact,
		Method:        install.Auto,
		Environ:       f.opts.Environ(),
		Geteuid:       f.env.Geteuid,
		PackageOutput: f.opts.Err,
		Progress:      fixProgress{f},
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return false, fmt.Errorf("gave up after %s: %w", f.env.InstallTimeout, err)
	}
	if err != nil {
		return false, err
	}
	f.installed = result.Path
	if real, err := filepath.EvalSymlinks(result.Path); err == nil {
		f.installed = real
	}
	if !result.Changed {
		f.say("bwrap %s was already installed at %s", result.Version, result.Path)
		return false, nil
	}
	if result.Method == install.Pinned {
		f.say("to undo the install: rm -r %s %s", filepath.Join(home, "bin", "bwrap"), filepath.Join(home, "versions", artifact.ID()))
	} else {
		f.say("installed bwrap %s at %s by the package manager; to undo, remove its bubblewrap package", result.Version, result.Path)
	}
	return true, nil
}

// noteShadowedInstall says when the bwrap just installed is not the one in use: bwrapkit
// picks --bwrap, BWRAPKIT_BWRAP and PATH before its own install.
func (f *fixer) noteShadowedInstall(report doctor.Report) {
	if f.installed == "" || report.Bwrap.Path == "" || report.Bwrap.Path == f.installed {
		return
	}
	f.say("the installed %s is not the bwrap in use: %s (from %s) comes first; pass --bwrap %s or set BWRAPKIT_BWRAP=%s, or remove the other one",
		f.installed, report.Bwrap.Path, report.Bwrap.Source, f.installed, f.installed)
}

// fixProgress shows the install's progress as plain fix lines.
type fixProgress struct{ f *fixer }

func (p fixProgress) Note(message string) { p.f.say("install: %s", message) }

func (fixProgress) Transfer(string, int64) io.WriteCloser { return discardCloser{} }

func (f *fixer) appArmorProfile(ctx context.Context, action doctor.FixAction) (bool, error) {
	profile, err := doctor.NewAppArmorProfile(action.Bwrap)
	if err != nil {
		return false, err
	}
	target := f.rooted(profile.File)
	previous, existed, err := readRegular(target)
	if err != nil {
		return false, err
	}
	if existed {
		if err := profile.CheckExisting(previous); err != nil {
			return false, err
		}
	}
	if existed && previous == profile.Content {
		f.say("%s is already in place", profile.File)
	} else {
		if err := atomicfile.Write(target, []byte(profile.Content), 0o644); err != nil {
			return false, fmt.Errorf("writing the profile: %w", err)
		}
		f.say("wrote %s: profile %s lets %s create user namespaces", profile.File, profile.Name, action.Bwrap)
	}
	parser, err := f.env.LookPath("apparmor_parser")
	if err != nil {
		f.say("apparmor_parser is not installed, so the profile is not loaded yet; load it with:")
		fmt.Fprintf(f.opts.Err, "    apparmor_parser -r %s\n", profile.File)
		return true, nil
	}
	if err := f.runBounded(ctx, parser, "-r", target); err != nil {
		// A profile that does not compile must not stay behind to fail at every boot.
		restore := "removed it again"
		if existed {
			if atomicfile.Write(target, []byte(previous), 0o644) != nil {
				restore = "could not restore its previous content"
			} else {
				restore = "restored its previous content"
			}
		} else if os.Remove(target) != nil {
			restore = "could not remove it"
		}
		return false, fmt.Errorf("loading %s failed, so bwrapkit %s: %w", profile.File, restore, err)
	}
	f.say("loaded it (apparmor_parser -r %s); to undo: apparmor_parser -R %s && rm %s", profile.File, profile.File, profile.File)
	return true, nil
}

func (f *fixer) sysctl(ctx context.Context, action doctor.FixAction) (bool, error) {
	target := f.rooted(action.File)
	previous, _, err := readRegular(target)
	if err != nil {
		return false, err
	}
	content, err := doctor.SysctlDropIn(action.File, previous, action.Settings)
	if err != nil {
		return false, err
	}
	tool, lookErr := f.env.LookPath("sysctl")
	changed := false
	var undo []string
	for _, setting := range action.Settings {
		was := "unknown"
		if data, err := os.ReadFile(f.rooted(setting.ProcPath())); err == nil {
			was = strings.TrimSpace(string(data))
		}
		if was == setting.Value {
			f.say("%s is already %s", setting.Key, setting.Value)
			continue
		}
		// Set it now first: a knob the kernel refuses (a container's read-only /proc/sys)
		// must not be persisted to fail again at every boot.
		if lookErr == nil {
			err = f.runBounded(ctx, tool, "-w", setting.String())
		} else {
			err = os.WriteFile(f.rooted(setting.ProcPath()), []byte(setting.Value+"\n"), 0)
		}
		if err != nil {
			return changed, fmt.Errorf("setting %s: %w", setting, err)
		}
		changed = true
		f.say("set %s = %s (was %s)", setting.Key, setting.Value, was)
		if was != "unknown" {
			undo = append(undo, "sysctl -w "+setting.Key+"="+was)
		}
	}
	if content != previous {
		if err := atomicfile.Write(target, []byte(content), 0o644); err != nil {
			return changed, fmt.Errorf("persisting in %s: %w", action.File, err)
		}
		f.say("persisted in %s", action.File)
	} else if !changed {
		return false, nil
	}
	f.say("to undo: %s", strings.Join(append([]string{"rm " + action.File}, undo...), " && "))
	return changed, nil
}

func (f *fixer) removeSetuid(action doctor.FixAction) (bool, error) {
	target := f.rooted(action.Bwrap)
	info, err := os.Stat(target)
	if err != nil {
		return false, err
	}
	if info.Mode()&fs.ModeSetuid == 0 {
		f.say("%s is no longer setuid", action.Bwrap)
		return false, nil
	}
	mode := info.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSticky)
	if err := os.Chmod(target, mode); err != nil {
		return false, err
	}
	f.say("removed the setuid bit from %s; to undo: chmod u+s %s", action.Bwrap, action.Bwrap)
	return true, nil
}

// readRegular reads a file that may be absent; anything but a regular file at its place
// (a symlink, a directory) is refused rather than replaced.
func readRegular(name string) (content string, exists bool, err error) {
	info, err := os.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if !info.Mode().IsRegular() {
		return "", true, fmt.Errorf("%s is not a regular file: left alone", name)
	}
	data, err := os.ReadFile(name)
	return string(data), true, err
}
