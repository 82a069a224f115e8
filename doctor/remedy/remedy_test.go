package remedy

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/platform"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/doctor golden files")

func TestAppArmorProfileGolden(t *testing.T) {
	for _, tc := range []struct{ golden, path, file string }{
		{"usr-bin-bwrap", "/usr/bin/bwrap", "/etc/apparmor.d/bwrapkit-usr.bin.bwrap"},
		{"path-with-spaces", "/opt/my tools/bwrap", "/etc/apparmor.d/bwrapkit-opt.my_tools.bwrap"},
		{"managed-install", "/home/dev/.local/share/bwrapkit/versions/253c70372599ac19/bwrap",
			"/etc/apparmor.d/bwrapkit-home.dev..local.share.bwrapkit.versions.253c70372599ac19.bwrap"},
		{"unusual-characters", "/srv/a,b!c#d @e+f/bwrap", "/etc/apparmor.d/bwrapkit-srv.a_b_c_d__e_f.bwrap"},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			profile, err := NewAppArmorProfile(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if profile.File != tc.file || "/etc/apparmor.d/"+profile.Name != profile.File {
				t.Errorf("file %s, name %s; want %s", profile.File, profile.Name, tc.file)
			}
			golden := filepath.Join(livetest.RepoRoot(), "testdata", "doctor", "apparmor", tc.golden+".golden")
			if *updateGolden {
				if err := os.WriteFile(golden, []byte(profile.Content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./doctor -run Golden -update)", err)
			}
			if profile.Content != string(want) {
				t.Errorf("profile for %s:\n%s\nwant (%s):\n%s", tc.path, profile.Content, golden, want)
			}
			// The doctor's own profile search must see the grant, or --fix would loop.
			root := fstest.MapFS{strings.TrimPrefix(profile.File, "/"): {Data: []byte(profile.Content)}}
			if found, ok := platform.AppArmorProfileGrantsUserns(root, tc.path); !ok || found != profile.File {
				t.Errorf("AppArmorProfileGrantsUserns does not see the profile for %s: %q %v", tc.path, found, ok)
			}
			if _, ok := platform.AppArmorProfileGrantsUserns(root, tc.path+"2"); ok {
				t.Errorf("the profile for %s also grants another path", tc.path)
			}
		})
	}
}

func TestAppArmorProfileRefusesPatterns(t *testing.T) {
	for _, path := range []string{
		"bin/bwrap", "/usr/bin/../bin/bwrap", "/usr/bin//bwrap", "/opt/a*b/bwrap", "/opt/v?/bwrap",
		"/opt/[x]/bwrap", "/opt/@{HOME}/bwrap", "/opt/^hat/bwrap", `/opt/q"uote/bwrap`, `/opt/back\slash/bwrap`,
		"/opt/new\nline/bwrap", "/opt/\xff/bwrap",
	} {
		if profile, err := NewAppArmorProfile(path); err == nil {
			t.Errorf("%q: accepted:\n%s", path, profile.Content)
		}
	}
}

func TestAppArmorProfileLongPath(t *testing.T) {
	long := "/" + strings.Repeat("very-long-directory-name/", 20) + "bwrap"
	profile, err := NewAppArmorProfile(long)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewAppArmorProfile(strings.Replace(long, "very", "VERY", 1)[:len(long)-5] + "bwrap2")
	if len(profile.Name) > maxProfileName || profile.Name == other.Name || !strings.HasPrefix(profile.Name, "bwrapkit-very-long") {
		t.Errorf("names %q (%d), %q", profile.Name, len(profile.Name), other.Name)
	}
}

func TestAppArmorProfileCheckExisting(t *testing.T) {
	profile, _ := NewAppArmorProfile("/usr/bin/bwrap")
	other, _ := NewAppArmorProfile("/usr/bin/bwrap2")
	for _, tc := range []struct {
		name, existing, wantErr string
	}{
		{"ours", profile.Content, ""},
		{"ours, edited below the mark", appArmorMark + "/usr/bin/bwrap\nprofile x {}\n", ""},
		{"ours for another path", other.Content, "for another bwrap, /usr/bin/bwrap2"},
		{"a distribution's", "abi <abi/4.0>,\nprofile bwrap /usr/bin/bwrap flags=(unconfined) {\n  userns,\n}\n", "not written by bwrapkit"},
		{"the mark further down", "# mine\n" + profile.Content, "not written by bwrapkit"},
		{"empty", "", "not written by bwrapkit"},
	} {
		err := profile.CheckExisting(tc.existing)
		if (tc.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestSysctlDropIn(t *testing.T) {
	const file = "/etc/sysctl.d/90-bwrapkit-userns.conf"
	clone := SysctlSetting{"kernel.unprivileged_userns_clone", "1"}
	limit := SysctlSetting{"user.max_user_namespaces", "15000"}
	fresh, err := SysctlDropIn(file, "", []SysctlSetting{clone})
	want := "# Written by bwrapkit doctor --fix: user namespaces for bwrap.\n" +
		"# Undo: rm " + file + ", then set each knob back with sysctl -w (or reboot).\n" +
		"kernel.unprivileged_userns_clone = 1\n"
	if err != nil || fresh != want {
		t.Fatalf("%v\n%s", err, fresh)
	}
	merged, err := SysctlDropIn(file, fresh, []SysctlSetting{limit, {"kernel.unprivileged_userns_clone", "1"}})
	if err != nil || !strings.HasSuffix(merged, "kernel.unprivileged_userns_clone = 1\nuser.max_user_namespaces = 15000\n") {
		t.Errorf("merge: %v\n%s", err, merged)
	}
	if _, err := SysctlDropIn(file, "kernel.unprivileged_userns_clone = 0\n", []SysctlSetting{clone}); err == nil ||
		!strings.Contains(err.Error(), "not written by bwrapkit") {
		t.Errorf("a foreign file: %v", err)
	}
	if _, err := ParseSysctlSettings("user.max_user_namespaces = 1; rm -rf /\n"); err == nil {
		t.Error("a value that is not a number was accepted")
	}
}

// TestScriptRuns: the pasteable block is valid shell that runs each command once, in order.
func TestScriptRuns(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	script := Script([]string{
		"bwrapkit install",
		WriteFileCommand("", out, "# Written by bwrapkit doctor --fix\nkey = 1\n"),
		"echo second >> " + Quote(out),
		"echo second >> " + Quote(out),
	})
	if !strings.HasPrefix(script, "bwrapkit install\nsh -eux <<'EOF'\n") || !strings.HasSuffix(script, "\nEOF\n") {
		t.Fatalf("script:\n%s", script)
	}
	body := strings.TrimPrefix(script, "bwrapkit install\n")
	if output, err := exec.Command("/bin/sh", "-c", body).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, output)
	}
	if got, _ := os.ReadFile(out); string(got) != "# Written by bwrapkit doctor --fix\nkey = 1\nsecond\n" {
		t.Errorf("wrote %q", got)
	}
	sudo := Script([]string{"sudo sysctl -w a.b=1", WriteFileCommand("sudo ", "/etc/x", "y\n")})
	if sudo != "sudo sh -eux <<'EOF'\nsysctl -w a.b=1\nprintf '%s\\n' 'y' | tee /etc/x >/dev/null\nEOF\n" {
		t.Errorf("sudo script:\n%s", sudo)
	}
}

// TestForContainer: each runtime gets its own command, run where it must be; emulators and
// Android get none and say so.
func TestForContainer(t *testing.T) {
	proc := Needs{Proc: true}
	confined := Needs{Seccomp: true, AppArmor: true}
	for _, tc := range []struct {
		name     string
		host     platform.Host
		needs    Needs
		commands []string // exactly
		text     []string
		inPlace  bool
	}{
		{"docker, masked proc", platform.Host{Container: "docker", Runtime: "docker"}, proc,
			[]string{"docker run --security-opt systempaths=unconfined <image>"}, []string{"on the host", "security_opt: [systempaths=unconfined]"}, true},
		{"docker, seccomp and docker-default", platform.Host{Container: "docker", Runtime: "docker"}, confined,
			[]string{"docker run --security-opt seccomp=unconfined --security-opt apparmor=unconfined <image>"}, []string{"on the host"}, true},
		{"podman", platform.Host{Container: "podman", Runtime: "podman"}, proc, []string{"podman run --security-opt unmask=ALL <image>"}, nil, true},
		{"nerdctl", platform.Host{Container: "containerd", Runtime: "containerd"}, proc, []string{"nerdctl run --security-opt systempaths=unconfined <image>"}, nil, true},
		{"kubernetes", platform.Host{Container: "kubernetes", Runtime: "kubernetes"}, proc, nil, []string{"procMount: Unmasked", "hostUsers: false", "manifest"}, true},
		{"kubernetes seccomp", platform.Host{Container: "kubernetes", Runtime: "kubernetes"}, confined, nil, []string{"seccompProfile: {type: Unconfined}", "appArmorProfile: {type: Unconfined}"}, true},
		{"lxd", platform.Host{Container: "lxc", Runtime: "lxd"}, proc,
			[]string{"lxc config set <container> security.nesting=true", "lxc restart <container>"}, []string{"on the host", "`lxc list`"}, true},
		{"incus", platform.Host{Container: "lxc", Runtime: "incus"}, proc,
			[]string{"incus config set <container> security.nesting=true", "incus restart <container>"}, []string{"`incus list`"}, true},
		{"proxmox with its CT ID", platform.Host{Container: "lxc", Runtime: "proxmox", RuntimeInstance: "101"}, proc,
			[]string{"pct set 101 --features nesting=1", "pct reboot 101"}, []string{"Proxmox VE host"}, true},
		{"crostini", platform.Host{Container: "lxc", Runtime: "crostini"}, proc,
			[]string{"vsh termina", "lxc config set penguin security.nesting true", "lxc restart penguin"}, []string{"crosh"}, true},
		{"plain lxc", platform.Host{Container: "lxc", Runtime: "lxc"}, proc,
			[]string{"printf '%s\\n' 'lxc.include = /usr/share/lxc/config/nesting.conf' 'lxc.mount.auto = proc:rw sys:mixed cgroup:mixed' | sudo tee -a /var/lib/lxc/<container>/config",
				"sudo lxc-stop -n <container>", "sudo lxc-start -n <container>"}, nil, true},
		{"nspawn proc", platform.Host{Container: "systemd-nspawn", Runtime: "systemd-nspawn"}, proc,
			[]string{"mkdir -p /run/bwrapkit-proc", "mount -t proc proc /run/bwrapkit-proc"}, []string{"Inside the container as root", "writable /proc/sys"}, true},
		{"openvz: no command bwrapkit knows", platform.Host{Container: "openvz", Runtime: "openvz"}, proc, nil, []string{"on the host", "knows no exact command for openvz"}, true},
		{"gvisor", platform.Host{Container: "docker", Runtime: "docker", Emulation: platform.EmulationGVisor}, proc, nil, []string{"gVisor", "--runtime=runc"}, false},
		{"proot in termux", platform.Host{Emulation: platform.EmulationProot, Termux: true, Tracer: platform.Tracer{PID: 9, Comm: "proot"}}, proc, nil,
			[]string{"no fix inside proot", "not in Termux"}, false},
		{"termux", platform.Host{Termux: true, Android: true}, proc, nil, []string{"no fix inside Termux"}, false},
		{"no container", platform.Host{}, proc, nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ForContainer(tc.host, tc.needs)
			if strings.Join(got.Commands, "\n") != strings.Join(tc.commands, "\n") {
				t.Errorf("commands\n%q\nwant\n%q", got.Commands, tc.commands)
			}
			for _, want := range tc.text {
				if !strings.Contains(got.Text, want) {
					t.Errorf("text lacks %q: %s", want, got.Text)
				}
			}
			if got.InPlace != tc.inPlace {
				t.Errorf("InPlace %v, want %v", got.InPlace, tc.inPlace)
			}
			if tc.name != "no container" && got.Text == "" {
				t.Error("no text")
			}
		})
	}
}
