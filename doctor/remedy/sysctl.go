package remedy

import (
	"fmt"
	"slices"
	"strings"
)

// SysctlSetting is a kernel knob and the value a fix gives it.
type SysctlSetting struct {
	Key   string // dotted, as sysctl names it: "user.max_user_namespaces"
	Value string
}

func (s SysctlSetting) String() string { return s.Key + "=" + s.Value }

// ProcPath is the knob's file under /proc/sys.
func (s SysctlSetting) ProcPath() string {
	return "/proc/sys/" + strings.ReplaceAll(s.Key, ".", "/")
}

// SysctlFile is the drop-in that printed remedies and --fix write alike: late enough to
// override distribution defaults in /usr/lib/sysctl.d (/etc/sysctl.conf still wins).
const SysctlFile = "/etc/sysctl.d/90-bwrapkit-userns.conf"

// sysctlMark starts the first line of the drop-in we write; a file without it is not ours.
const sysctlMark = "# Written by bwrapkit doctor --fix"

// ParseSysctlSettings reads the `key = value` lines of a sysctl.d text, skipping comments.
// Keys and values are checked, since they end up in commands printed for a shell.
func ParseSysctlSettings(text string) ([]SysctlSetting, error) {
	var settings []SysctlSetting
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || key == "" || strings.Trim(key, "abcdefghijklmnopqrstuvwxyz0123456789_.") != "" ||
			value == "" || strings.Trim(value, "0123456789") != "" {
			return nil, fmt.Errorf("not a `key = number` sysctl line: %q", line)
		}
		settings = append(settings, SysctlSetting{Key: key, Value: value})
	}
	return settings, nil
}

// SysctlDropIn is the content of our sysctl.d drop-in at file with settings, merged into
// existing (the file's current content, "" if there is none): a file we did not write is
// refused, and a knob already in ours takes the new value.
func SysctlDropIn(file, existing string, settings []SysctlSetting) (string, error) {
	var merged []SysctlSetting
	if existing != "" {
		if !strings.HasPrefix(existing, sysctlMark) {
			return "", fmt.Errorf("%s exists and was not written by bwrapkit (its first line is not %q): left alone", file, sysctlMark)
		}
		var err error
		if merged, err = ParseSysctlSettings(existing); err != nil {
			return "", fmt.Errorf("%s: %w", file, err)
		}
	}
	for _, setting := range settings {
		index := slices.IndexFunc(merged, func(s SysctlSetting) bool { return s.Key == setting.Key })
		if index >= 0 {
			merged[index] = setting
		} else {
			merged = append(merged, setting)
		}
	}
	var text strings.Builder
	fmt.Fprintf(&text, "%s: user namespaces for bwrap.\n", sysctlMark)
	fmt.Fprintf(&text, "# Undo: rm %s, then set each knob back with sysctl -w (or reboot).\n", file)
	for _, setting := range merged {
		fmt.Fprintf(&text, "%s = %s\n", setting.Key, setting.Value)
	}
	return text.String(), nil
}

// SysctlCommands set settings now and persist them in file, as --fix does: the file written
// carries --fix's mark, so a later --fix merges into it rather than refusing it.
func SysctlCommands(sudo, file string, settings []SysctlSetting) []string {
	var commands []string
	for _, setting := range settings {
		commands = append(commands, sudo+"sysctl -w "+setting.String())
	}
	content, _ := SysctlDropIn(file, "", settings)
	return append(commands, WriteFileCommand(sudo, file, content))
}

// SysctlFix is the sysctl remedy for settings, in SysctlFile. Content is the drop-in itself.
func SysctlFix(sudo, bwrap string, settings ...SysctlSetting) *Fix {
	content, _ := SysctlDropIn(SysctlFile, "", settings)
	return &Fix{Kind: Sysctl, Bwrap: bwrap, File: SysctlFile, Content: content,
		Commands: SysctlCommands(sudo, SysctlFile, settings)}
}
