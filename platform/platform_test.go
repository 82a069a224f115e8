package platform

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

const fixtures = "../testdata/platform"

// set is a knob that was read and parsed.
func set(value int64, raw string) Knob { return Knob{Present: true, Value: value, Raw: raw} }

// loadEnv reads a fixture's env file (KEY=VALUE lines) into a lookup, never touching the
// process environment, so tests stay parallel.
func loadEnv(t *testing.T, path string) func(string) string {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	env := map[string]string{}
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		key, value, found := strings.Cut(scanner.Text(), "=")
		if found && !strings.HasPrefix(key, "#") {
			env[key] = value
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return func(key string) string { return env[key] }
}

func mapEnv(env map[string]string) func(string) string {
	return func(key string) string { return env[key] }
}

// fixtureWant is what each fixture must yield: the Host (OS and Arch are filled in by the
// test) and the verdicts the doctor builds on.
type fixtureWant struct {
	host             Host
	blocked          bool   // UserNamespacesBlocked
	restricted       bool   // AppArmorRestrictsUserns
	unsupported      bool   // Unsupported
	profileForUsrBin string // AppArmorProfileGrantsUserns(root, "/usr/bin/bwrap")
}

// userBase marks a host whose process runs in the initial user namespace.
func userBase(h Host) Host { h.InitialUserNamespace = true; return h }

var fixtureWants = map[string]fixtureWant{
	"debian12": {host: userBase(Host{Kind: KindLinux, Kernel: "6.1.0-28-amd64",
		UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(63432, "63432"), AppArmorEnabled: true})},
	"ubuntu2404-restricted": {restricted: true, host: userBase(Host{Kind: KindLinux, Kernel: "6.8.0-31-generic",
		UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(127539, "127539"),
		AppArmorRestrictUserns: set(1, "1"), AppArmorEnabled: true})},
	"ubuntu2404-profile": {restricted: true, profileForUsrBin: "/etc/apparmor.d/bwrap-userns-restrict",
		host: userBase(Host{Kind: KindLinux, Kernel: "6.8.0-31-generic",
			UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(127539, "127539"),
			AppArmorRestrictUserns: set(1, "1"), AppArmorEnabled: true})},
	"wsl1": {blocked: true, unsupported: true, host: Host{Kind: KindWSL1, Kernel: "4.4.0-19041-Microsoft",
		InitialUserNamespace: true}},
	"wsl2-interop": {host: userBase(Host{Kind: KindWSL2, Kernel: "5.15.153.1-microsoft-standard-WSL2",
		MaxUserNamespaces: set(63840, "63840")})},
	"wsl2-interop-late": {host: userBase(Host{Kind: KindWSL2, Kernel: "6.6.87.2-microsoft-standard-WSL2",
		MaxUserNamespaces: set(63840, "63840")})},
	"wsl2-custom-kernel": {host: userBase(Host{Kind: KindWSL2, Kernel: "6.12.8-custom+",
		MaxUserNamespaces: set(63840, "63840")})},
	"docker": {host: userBase(Host{Kind: KindLinux, Kernel: "6.1.0-28-amd64", Container: ContainerDocker,
		UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(31489, "31489"), AppArmorEnabled: true,
		Seccomp: 2})},
	"podman": {restricted: true, host: Host{Kind: KindLinux, Kernel: "6.8.0-31-generic", Container: ContainerPodman,
		UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(127539, "127539"),
		AppArmorRestrictUserns: set(1, "1"), AppArmorEnabled: true, Seccomp: 2}},
	"kubernetes": {host: userBase(Host{Kind: KindLinux, Kernel: "5.4.0-1089-azure", Container: ContainerKubernetes,
		UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(63722, "63722"), AppArmorEnabled: true,
		NoNewPrivs: true, Seccomp: 2})},
	"lxd": {restricted: true, host: Host{Kind: KindLinux, Kernel: "6.8.0-31-generic", Container: ContainerLXC,
		UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(127539, "127539"),
		AppArmorRestrictUserns: set(1, "1"), AppArmorEnabled: true}},
	"userns-disabled-debian": {blocked: true, host: userBase(Host{Kind: KindLinux, Kernel: "4.19.0-27-amd64",
		UnprivilegedUsernsClone: set(0, "0"), MaxUserNamespaces: set(31778, "31778"), AppArmorEnabled: true})},
	"userns-max-zero": {blocked: true, host: userBase(Host{Kind: KindLinux, Kernel: "4.18.0-553.el8_10.x86_64",
		MaxUserNamespaces: set(0, "0"), SELinux: "enforcing"})},
	"userns-module-disabled": {blocked: true, host: Host{Kind: KindLinux, Kernel: "3.10.0-514.el7.x86_64",
		UsernsModuleEnable: set(0, "N"), SELinux: "disabled", InitialUserNamespace: true}},
}

func TestDetectFixtures(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(fixtures)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, entry := range entries {
		if entry.IsDir() {
			dirs = append(dirs, entry.Name())
		}
	}
	var named []string
	for name := range fixtureWants {
		named = append(named, name)
	}
	slices.Sort(named)
	if !slices.Equal(dirs, named) {
		t.Fatalf("fixture directories %v, table %v: every fixture needs a row", dirs, named)
	}
	for name, want := range fixtureWants {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(fixtures, name)
			root := os.DirFS(dir)
			got := Detect(root, loadEnv(t, filepath.Join(dir, "env")), "linux", "amd64")
			want.host.OS, want.host.Arch = "linux", "amd64"
			if !reflect.DeepEqual(got, want.host) {
				t.Errorf("Detect:\n got %+v\nwant %+v", got, want.host)
			}
			if reason, blocked := got.UserNamespacesBlocked(); blocked != want.blocked || (reason == "") == blocked ||
				(got.UserNamespacesRemedy() == "") == blocked {
				t.Errorf("UserNamespacesBlocked = %q, %v; remedy %q; want blocked %v", reason, blocked, got.UserNamespacesRemedy(), want.blocked)
			}
			if restricted := got.AppArmorRestrictsUserns(); restricted != want.restricted {
				t.Errorf("AppArmorRestrictsUserns = %v, want %v", restricted, want.restricted)
			}
			if _, unsupported := got.Unsupported(); unsupported != want.unsupported {
				t.Errorf("Unsupported = %v, want %v", unsupported, want.unsupported)
			}
			profile, ok := AppArmorProfileGrantsUserns(root, "/usr/bin/bwrap")
			if profile != want.profileForUsrBin || ok != (want.profileForUsrBin != "") {
				t.Errorf("AppArmorProfileGrantsUserns(/usr/bin/bwrap) = %q, %v, want %q", profile, ok, want.profileForUsrBin)
			}
			if profile, ok := AppArmorProfileGrantsUserns(root, "/usr/local/bin/bwrap"); ok {
				t.Errorf("a profile for /usr/bin/bwrap must not grant /usr/local/bin/bwrap, got %q", profile)
			}
		})
	}
}

// debianRoot is a small healthy host for tests that change one thing.
func debianRoot() fstest.MapFS {
	return fstest.MapFS{
		"proc/sys/kernel/osrelease":                             {Data: []byte("6.1.0-28-amd64\n")},
		"proc/sys/kernel/unprivileged_userns_clone":             {Data: []byte("1\n")},
		"proc/sys/user/max_user_namespaces":                     {Data: []byte("63432\n")},
		"proc/self/status":                                      {Data: []byte("Name:\tbash\nNoNewPrivs:\t0\nSeccomp:\t0\nSeccomp_filters:\t0\n")},
		"proc/self/uid_map":                                     {Data: []byte("         0          0 4294967295\n")},
		"sys/module/apparmor/parameters/enabled":                {Data: []byte("Y\n")},
		"proc/sys/kernel/apparmor_restrict_unprivileged_userns": {Data: []byte("0\n")},
	}
}

func TestDetectOddFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		edit     fstest.MapFS
		problems []string
		check    func(Host) bool
	}{
		{"garbage in a knob", fstest.MapFS{"proc/sys/user/max_user_namespaces": {Data: []byte("lots\n")}},
			[]string{`/proc/sys/user/max_user_namespaces: not an integer: "lots"`},
			func(h Host) bool {
				return h.MaxUserNamespaces == Knob{Raw: "lots", Err: `not an integer: "lots"`}
			}},
		{"empty knob", fstest.MapFS{"proc/sys/kernel/unprivileged_userns_clone": {Data: nil}},
			[]string{`/proc/sys/kernel/unprivileged_userns_clone: not an integer: ""`},
			func(h Host) bool { return !h.UnprivilegedUsernsClone.Present && h.UnprivilegedUsernsClone.Err != "" }},
		{"directory where a knob should be", fstest.MapFS{"proc/sys/user/max_user_namespaces": {Mode: fs.ModeDir | 0o555}},
			[]string{"/proc/sys/user/max_user_namespaces: is a directory"},
			func(h Host) bool { return h.MaxUserNamespaces == Knob{Err: "is a directory"} }},
		{"fifo where a knob should be (opening it would block)",
			fstest.MapFS{"proc/sys/kernel/apparmor_restrict_unprivileged_userns": {Mode: fs.ModeNamedPipe | 0o644}},
			[]string{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns: not a regular file (p---------)"},
			func(h Host) bool { return !h.AppArmorRestrictUserns.Present && !h.AppArmorRestrictsUserns() }},
		{"module parameter neither Y nor N", fstest.MapFS{"sys/module/user_namespace/parameters/enable": {Data: []byte("1\n")}},
			[]string{`/sys/module/user_namespace/parameters/enable: want Y or N, got "1"`},
			func(h Host) bool { return h.UsernsModuleEnable == Knob{Raw: "1", Err: `want Y or N, got "1"`} }},
		{"osrelease is a directory", fstest.MapFS{"proc/sys/kernel/osrelease": {Mode: fs.ModeDir | 0o555}},
			[]string{"/proc/sys/kernel/osrelease: is a directory"},
			func(h Host) bool { return h.Kernel == "" && h.Kind == KindLinux }},
		{"oversized file", fstest.MapFS{"proc/sys/kernel/osrelease": {Data: make([]byte, maxFileSize+1)}},
			[]string{"/proc/sys/kernel/osrelease: larger than 1048576 bytes"},
			func(h Host) bool { return h.Kernel == "" }},
		{"odd status lines", fstest.MapFS{"proc/self/status": {Data: []byte("NoNewPrivs:\tyes\nSeccomp:\t3\nCapEff:\tzz\n")}},
			[]string{`/proc/self/status: NoNewPrivs: want 0 or 1, got "yes"`, `/proc/self/status: Seccomp: want 0, 1 or 2, got "3"`,
				`/proc/self/status: CapEff: not a hex mask: "zz"`},
			func(h Host) bool { return !h.NoNewPrivs && h.Seccomp == 0 && !h.CapSysAdmin }},
		{"odd LSM files", fstest.MapFS{"sys/module/apparmor/parameters/enabled": {Data: []byte("maybe")},
			"sys/fs/selinux/enforce": {Data: []byte("2")}},
			[]string{`/sys/module/apparmor/parameters/enabled: want Y or N, got "maybe"`, `/sys/fs/selinux/enforce: want 0 or 1, got "2"`},
			func(h Host) bool { return !h.AppArmorEnabled && h.SELinux == "" }},
		{"uid_map is a directory", fstest.MapFS{"proc/self/uid_map": {Mode: fs.ModeDir}},
			[]string{"/proc/self/uid_map: is a directory"},
			func(h Host) bool { return !h.InitialUserNamespace }},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			root := debianRoot()
			for name, file := range test.edit {
				root[name] = file
			}
			host := Detect(root, mapEnv(nil), "linux", "amd64")
			if !slices.Equal(host.Problems, test.problems) {
				t.Errorf("Problems = %q, want %q", host.Problems, test.problems)
			}
			if !test.check(host) {
				t.Errorf("unexpected host %+v", host)
			}
		})
	}
}

func TestDetectHealthyHasNoProblems(t *testing.T) {
	t.Parallel()
	host := Detect(debianRoot(), nil, "linux", "arm64")
	if len(host.Problems) != 0 || host.Kind != KindLinux || host.Arch != "arm64" || !host.MaxUserNamespaces.Present {
		t.Errorf("Detect = %+v", host)
	}
	if _, blocked := host.UserNamespacesBlocked(); blocked || host.AppArmorRestrictsUserns() {
		t.Errorf("a healthy host reads as blocked or restricted: %+v", host)
	}
}

func TestDetectOtherOS(t *testing.T) {
	t.Parallel()
	for goos, kind := range map[string]string{"darwin": KindDarwin, "windows": KindWindows, "freebsd": KindOther} {
		host := Detect(debianRoot(), nil, goos, "arm64")
		// A Linux-looking tree must not leak into a host that has no Linux kernel.
		want := Host{OS: goos, Arch: "arm64", Kind: kind}
		if !reflect.DeepEqual(host, want) {
			t.Errorf("%s: Detect = %+v, want %+v", goos, host, want)
		}
		if reason, unsupported := host.Unsupported(); !unsupported || reason == "" {
			t.Errorf("%s: Unsupported = %q, %v", goos, reason, unsupported)
		}
	}
}

func TestDetectKind(t *testing.T) {
	t.Parallel()
	wslEnv := map[string]string{"WSL_DISTRO_NAME": "Ubuntu"}
	tests := []struct {
		name      string
		osrelease string
		markers   []string
		env       map[string]string
		want      string
	}{
		{"WSL variables leaked into plain Linux", "6.1.0-28-amd64", nil, wslEnv, KindLinux},
		{"WSL markers without WSL variables", "6.1.0-28-amd64", []string{"run/WSL/.keep"}, nil, KindLinux},
		{"custom kernel with run/WSL", "6.1.21-custom", []string{"run/WSL/.keep"}, wslEnv, KindWSL2},
		{"WSL2 suffix alone", "6.1.21.2-WSL2", nil, nil, KindWSL2},
		{"WSL1 with every marker stays WSL1", "4.4.0-22621-Microsoft",
			[]string{"run/WSL/.keep", "proc/sys/fs/binfmt_misc/WSLInterop"}, wslEnv, KindWSL1},
	}
	for _, test := range tests {
		root := debianRoot()
		root["proc/sys/kernel/osrelease"] = &fstest.MapFile{Data: []byte(test.osrelease + "\n")}
		for _, marker := range test.markers {
			root[marker] = &fstest.MapFile{}
		}
		if got := Detect(root, mapEnv(test.env), "linux", "amd64").Kind; got != test.want {
			t.Errorf("%s: Kind = %q, want %q", test.name, got, test.want)
		}
	}
}

func TestDetectContainer(t *testing.T) {
	t.Parallel()
	dockerV1 := "12:pids:/docker/4f1d8a9c0b2e3d4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f\n1:name=systemd:/docker/4f1d8a9c0b2e\n"
	tests := []struct {
		name  string
		files map[string]string
		env   map[string]string
		want  string
	}{
		{"nothing", nil, nil, ""},
		{"docker on cgroup v1 without .dockerenv", map[string]string{"proc/1/cgroup": dockerV1}, nil, ContainerDocker},
		{"docker only in our own cgroup is not enough", map[string]string{"proc/self/cgroup": dockerV1}, nil, ""},
		{"podman by variable", nil, map[string]string{"container": "podman"}, ContainerPodman},
		{"lxc by variable", nil, map[string]string{"container": "lxc"}, ContainerLXC},
		{"lxc by cgroup", map[string]string{"proc/1/cgroup": "4:memory:/lxc/build01\n"}, nil, ContainerLXC},
		{"kubernetes by variable", map[string]string{".dockerenv": ""}, map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, ContainerKubernetes},
		{"kubernetes by systemd-driver cgroup", map[string]string{
			"proc/self/cgroup": "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1a2b.slice/cri-containerd-9f8e.scope\n",
			"proc/1/cgroup":    dockerV1}, nil, ContainerKubernetes},
	}
	for _, test := range tests {
		root := debianRoot()
		for name, data := range test.files {
			root[name] = &fstest.MapFile{Data: []byte(data)}
		}
		if got := Detect(root, mapEnv(test.env), "linux", "amd64").Container; got != test.want {
			t.Errorf("%s: Container = %q, want %q", test.name, got, test.want)
		}
	}
}

func TestUserNamespacesBlockedPrivilege(t *testing.T) {
	t.Parallel()
	debianOff := Host{Kind: KindLinux, UnprivilegedUsernsClone: set(0, "0")}
	tests := []struct {
		name    string
		host    func(Host) Host
		blocked bool
	}{
		{"unprivileged user", func(h Host) Host { return h }, true},
		{"root on the host is exempt from the Debian knob", func(h Host) Host {
			h.CapSysAdmin, h.InitialUserNamespace = true, true
			return h
		}, false},
		{"root in a rootless container is not", func(h Host) Host { h.CapSysAdmin = true; return h }, true},
		{"max_user_namespaces = 0 binds root too", func(h Host) Host {
			h.CapSysAdmin, h.InitialUserNamespace = true, true
			h.MaxUserNamespaces = set(0, "0")
			return h
		}, true},
		{"an unreadable knob blocks nothing", func(Host) Host {
			return Host{Kind: KindLinux, MaxUserNamespaces: Knob{Err: "permission denied"}}
		}, false},
	}
	for _, test := range tests {
		if _, blocked := test.host(debianOff).UserNamespacesBlocked(); blocked != test.blocked {
			t.Errorf("%s: blocked = %v, want %v", test.name, blocked, test.blocked)
		}
	}
}

// TestDetectLive reads this machine. It proves the seam is os.DirFS("/") compatible and
// that real /proc files (size 0 in stat) read whole.
func TestDetectLive(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc of a Linux host")
	}
	host := Detect(os.DirFS("/"), os.Getenv, runtime.GOOS, runtime.GOARCH)
	t.Logf("%+v", host)
	if host.Kind != KindLinux && host.Kind != KindWSL2 {
		t.Errorf("Kind = %q on a Linux host", host.Kind)
	}
	if host.Kernel == "" || strings.ContainsAny(host.Kernel, " \n") {
		t.Errorf("Kernel = %q", host.Kernel)
	}
	if !host.MaxUserNamespaces.Present {
		t.Errorf("MaxUserNamespaces = %+v: every kernel since 4.9 has it", host.MaxUserNamespaces)
	}
}
