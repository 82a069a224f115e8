package install

import (
	"errors"
	"slices"
	"strings"

	"github.com/bwrapkit/bwrapkit/internal/pathlist"
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

// Managers returns the supported package managers in order of preference (dnf before yum
// because on current Fedora and RHEL yum is dnf under another name). Each call returns a
// fresh copy: no importer can change which programs install runs as root.
func Managers() []Manager {
	copies := make([]Manager, len(managers))
	for i, manager := range managers {
		copies[i] = Manager{
			Name:    manager.Name,
			Env:     slices.Clone(manager.Env),
			Install: slices.Clone(manager.Install),
			Refresh: slices.Clone(manager.Refresh),
		}
	}
	return copies
}

var managers = []Manager{
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
	for _, manager := range Managers() {
		if program, found := pathlist.Look(path, manager.Name, isExecutable); found {
			return manager, program, nil
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
