package install

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestChooseManager(t *testing.T) {
	for _, tc := range []struct {
		name        string
		path        string
		executables []string
		want        string // program path; empty: none
	}{
		{"debian", "/usr/local/bin:/usr/bin:/bin", []string{"/usr/bin/apt-get", "/usr/bin/dpkg"}, "/usr/bin/apt-get"},
		{"fedora has both dnf and yum", "/usr/bin", []string{"/usr/bin/yum", "/usr/bin/dnf"}, "/usr/bin/dnf"},
		{"centos 7", "/usr/bin:/bin", []string{"/usr/bin/yum"}, "/usr/bin/yum"},
		{"opensuse", "/usr/sbin:/usr/bin", []string{"/usr/bin/zypper"}, "/usr/bin/zypper"},
		{"arch", "/usr/bin", []string{"/usr/bin/pacman"}, "/usr/bin/pacman"},
		{"alpine", "/usr/sbin:/usr/bin:/sbin:/bin", []string{"/sbin/apk"}, "/sbin/apk"},
		{"first PATH entry wins for one manager", "/opt/bin:/usr/bin", []string{"/usr/bin/apt-get", "/opt/bin/apt-get"}, "/opt/bin/apt-get"},
		{"preference beats PATH order", "/opt/bin:/usr/bin", []string{"/opt/bin/apk", "/usr/bin/apt-get"}, "/usr/bin/apt-get"},
		{"relative entry ignored", "bin:/usr/bin", []string{"bin/apt-get", "/usr/bin/pacman"}, "/usr/bin/pacman"},
		{"empty entry ignored", ":/usr/bin", []string{"apt-get", "/usr/bin/pacman"}, "/usr/bin/pacman"},
		{"none", "/usr/bin", []string{"/usr/bin/brew"}, ""},
		{"empty PATH", "", []string{"/usr/bin/apt-get"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, program, err := ChooseManager(tc.path, func(name string) bool { return slices.Contains(tc.executables, name) })
			if tc.want == "" {
				if !errors.Is(err, ErrNoManager) {
					t.Fatalf("ChooseManager = %q, %v; want ErrNoManager", program, err)
				}
				return
			}
			if err != nil || program != tc.want {
				t.Fatalf("ChooseManager = %q, %v; want %q", program, err, tc.want)
			}
		})
	}
}

func TestManagerCommandLines(t *testing.T) {
	want := map[string]string{
		"apt-get": "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends bubblewrap",
		"dnf":     "dnf -y install bubblewrap",
		"yum":     "yum -y install bubblewrap",
		"zypper":  "zypper --non-interactive install bubblewrap",
		"pacman":  "pacman -S --noconfirm --needed bubblewrap",
		"apk":     "apk --no-interactive update && apk --no-interactive add bubblewrap",
	}
	if len(Managers) != len(want) {
		t.Fatalf("%d managers, want %d", len(Managers), len(want))
	}
	for _, manager := range Managers {
		if got := manager.CommandLine(); got != want[manager.Name] {
			t.Errorf("%s: CommandLine() = %q, want %q", manager.Name, got, want[manager.Name])
		}
		if !slices.Contains(manager.Install, "bubblewrap") {
			t.Errorf("%s installs %v, not bubblewrap", manager.Name, manager.Install)
		}
	}
}

func TestEnviron(t *testing.T) {
	got := environ([]string{"PATH=/bin", "DEBIAN_FRONTEND=dialog", "HOME=/root"}, []string{"DEBIAN_FRONTEND=noninteractive"})
	if strings.Join(got, " ") != "PATH=/bin HOME=/root DEBIAN_FRONTEND=noninteractive" {
		t.Errorf("environ = %q", got)
	}
	if path := lookup([]string{"PATH=/a", "X=1", "PATH=/b"}, "PATH"); path != "/b" {
		t.Errorf("lookup PATH = %q, want the last entry", path)
	}
}
