package install

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// Manager is a package manager and its non-interactive way to install bubblewrap.
type Manager struct {
	Name    string
	Env     []string // added to the environment, NAME=value
	Install []string // arguments after the program name
	// Refresh updates the package lists. It runs, followed by one more Install, only
	// when Install fails: a host whose lists are fresh is not sent to the network, and a
	// fresh container (apt and apk start with no lists) still works.
	Refresh []string
}

// Managers are the supported package managers in order of preference: dnf before yum
// because on current Fedora and RHEL yum is dnf under another name.
var Managers = []Manager{
	{
		Name: "apt-get",
		// noninteractive makes debconf take defaults instead of asking on a terminal.
		Env:     []string{"DEBIAN_FRONTEND=noninteractive"},
		Install: []string{"install", "-y", "--no-install-recommends", "bubblewrap"},
		Refresh: []string{"update"},
	},
	{Name: "dnf", Install: []string{"-y", "install", "bubblewrap"}},
	{Name: "yum", Install: []string{"-y", "install", "bubblewrap"}},
	{Name: "zypper", Install: []string{"--non-interactive", "install", "bubblewrap"}},
	// No -Sy: refreshing the sync database without a full upgrade is a partial upgrade,
	// which Arch does not support. --needed makes an installed bwrap a no-op.
	{Name: "pacman", Install: []string{"-S", "--noconfirm", "--needed", "bubblewrap"}},
	// --no-interactive is a global option (apk-tools 2.12 and later): it goes before the
	// applet and overrides /etc/apk/interactive.
	{
		Name:    "apk",
		Install: []string{"--no-interactive", "add", "bubblewrap"},
		Refresh: []string{"--no-interactive", "update"},
	},
}

// ErrNoManager says none of the supported package managers is on PATH.
var ErrNoManager = errors.New("no supported package manager (apt-get, dnf, yum, zypper, pacman, apk) on PATH")

// ChooseManager picks the first supported package manager found on PATH and returns
// its absolute path. Relative and empty PATH entries are ignored, as locate does.
func ChooseManager(path string, isExecutable func(name string) bool) (Manager, string, error) {
	for _, manager := range Managers {
		for _, dir := range filepath.SplitList(path) {
			if !filepath.IsAbs(dir) {
				continue
			}
			program := filepath.Join(dir, manager.Name)
			if isExecutable(program) {
				return manager, program, nil
			}
		}
	}
	return Manager{}, "", ErrNoManager
}

// CommandLine is the shell command a root user can run to do what this manager does.
func (m Manager) CommandLine() string {
	install := strings.Join(append(append(append([]string{}, m.Env...), m.Name), m.Install...), " ")
	if m.Refresh == nil {
		return install
	}
	return strings.Join(append([]string{m.Name}, m.Refresh...), " ") + " && " + install
}

// isExecutable is the real check: a regular file with an execute bit, symlinks followed.
func isExecutable(name string) bool {
	info, err := os.Stat(name)
	return err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0
}

// environ is base with each NAME=value of extra replacing any earlier NAME.
func environ(base, extra []string) []string {
	merged := make([]string, 0, len(base)+len(extra))
	for _, entry := range base {
		name, _, _ := strings.Cut(entry, "=")
		if !hasName(extra, name) {
			merged = append(merged, entry)
		}
	}
	return append(merged, extra...)
}

func hasName(entries []string, name string) bool {
	for _, entry := range entries {
		if entryName, _, _ := strings.Cut(entry, "="); entryName == name {
			return true
		}
	}
	return false
}

// lookup returns the value of name in an environment list; the last entry wins.
func lookup(env []string, name string) string {
	value := ""
	for _, entry := range env {
		if entryName, entryValue, ok := strings.Cut(entry, "="); ok && entryName == name {
			value = entryValue
		}
	}
	return value
}
