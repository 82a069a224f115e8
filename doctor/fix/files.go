package fix

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/bwrapkit/bwrapkit/doctor/remedy"
	"github.com/bwrapkit/bwrapkit/internal/atomicfile"
)

// The host changes of `doctor --fix` as root: the AppArmor profile, the sysctl drop-in and
// live knobs, the setuid bit. Each refuses a file it did not write and says how to undo.

func (f *Fixer) appArmorProfile(ctx context.Context, action Action) (bool, error) {
	profile, err := remedy.NewAppArmorProfile(action.Bwrap)
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
		fmt.Fprintf(f.env.Err, "    apparmor_parser -r %s\n", profile.File)
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

func (f *Fixer) sysctl(ctx context.Context, action Action) (bool, error) {
	target := f.rooted(action.File)
	previous, _, err := readRegular(target)
	if err != nil {
		return false, err
	}
	content, err := remedy.SysctlDropIn(action.File, previous, action.Settings)
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

func (f *Fixer) removeSetuid(action Action) (bool, error) {
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
