package install

import (
	"errors"
	"slices"
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
	if len(Managers()) != len(want) {
		t.Fatalf("%d managers, want %d", len(Managers()), len(want))
	}
	for _, manager := range Managers() {
		if got := manager.CommandLine(); got != want[manager.Name] {
			t.Errorf("%s: CommandLine() = %q, want %q", manager.Name, got, want[manager.Name])
		}
		if !slices.Contains(manager.Install, "bubblewrap") {
			t.Errorf("%s installs %v, not bubblewrap", manager.Name, manager.Install)
		}
	}
}

// TestManagersIsACopy: an importer that edits what it got changes nothing for the next
// caller (the argv install runs as root comes from this table).
func TestManagersIsACopy(t *testing.T) {
	first := Managers()
	first[0].Name = "evil"
	first[0].Install[0] = "remove"
	first[0].Env = append(first[0].Env[:0], "LD_PRELOAD=/tmp/x.so")
	second := Managers()
	if second[0].Name != "apt-get" || second[0].Install[0] != "install" || second[0].Env[0] != "DEBIAN_FRONTEND=noninteractive" {
		t.Errorf("an edit of one copy reached the next: %+v", second[0])
	}
}
