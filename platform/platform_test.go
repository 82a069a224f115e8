package platform

import (
	"bufio"
	"fmt"
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

// fixtureWant is what each fixture must yield: the Host's settings (OS and Arch are filled
// in by the test), the runtime and confinement facts, and the verdicts the doctor builds on.
type fixtureWant struct {
	host             Host
	facts            facts
	blocked          bool   // UserNamespacesBlocked
	restricted       bool   // AppArmorRestrictsUserns
	unsupported      bool   // Unsupported
	profileForUsrBin string // AppArmorProfileGrantsUserns(root, "/usr/bin/bwrap")
}

// facts are the runtime and confinement facts of a Host in the words a reader checks them by.
type facts struct {
	runtime   string   // Runtime, with "/"+RuntimeInstance when there is one
	emulation string   // Emulation
	vm        string   // VirtualMachine
	android   string   // "android", "android+termux", "termux" or ""
	label     string   // AppArmorLabel.String()
	seccomp   string   // "mode/filters", "unknown"
	masks     []string // Proc.Masks()
	visible   string   // Proc.VisibleProc(), "none", or "unknown" without mountinfo
	userns    string   // UsernsBuild.State
	tracer    string   // "PID comm"
}

// factsOf renders the new facts of a host.
func factsOf(h Host) facts {
	f := facts{runtime: h.Runtime, emulation: h.Emulation, vm: h.VirtualMachine, label: h.AppArmorLabel.String(),
		masks: h.Proc.Masks(), userns: h.UsernsBuild.State, seccomp: "unknown", visible: "unknown"}
	if h.RuntimeInstance != "" {
		f.runtime += "/" + h.RuntimeInstance
	}
	switch {
	case h.Android && h.Termux:
		f.android = "android+termux"
	case h.Android:
		f.android = "android"
	case h.Termux:
		f.android = "termux"
	}
	if h.SeccompState.Known {
		f.seccomp = fmt.Sprintf("%d/%d", h.SeccompState.Mode, h.SeccompState.Filters)
	}
	if h.Proc.Known {
		f.visible = "none"
		if mountPoint, ok := h.Proc.VisibleProc(); ok {
			f.visible = mountPoint
		}
	}
	if h.Tracer.PID != 0 {
		f.tracer = fmt.Sprintf("%d %s", h.Tracer.PID, h.Tracer.Comm)
	}
	return f
}

// settingsOf is the host without the facts factsOf covers, for a whole-struct comparison.
func settingsOf(h Host) Host {
	h.Runtime, h.RuntimeInstance, h.RuntimeEvidence, h.Emulation, h.VirtualMachine = "", "", nil, "", ""
	h.Android, h.Termux, h.Tracer = false, false, Tracer{}
	h.AppArmorLabel, h.SeccompState, h.Proc, h.UsernsBuild, h.Cgroup = Confinement{}, SeccompState{}, ProcView{}, UsernsBuild{}, Cgroup{}
	return h
}

// userBase marks a host whose process runs in the initial user namespace.
func userBase(h Host) Host { h.InitialUserNamespace = true; return h }

// Facts shared by fixtures without the newer files (mountinfo, ns, attr): everything unknown.
var (
	oldFacts     = facts{label: "unknown", seccomp: "0/0", visible: "unknown"}
	dockerMasks  = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", "/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/scsi"}
	lxcfsMasks   = []string{"/proc/cpuinfo", "/proc/diskstats", "/proc/loadavg", "/proc/meminfo", "/proc/slabinfo", "/proc/stat", "/proc/swaps", "/proc/uptime"}
	androidBuild = "5.10.198-android13-4-00050-g12f3388846c3-ab11920634"
)

// with returns f changed by edit, so a row states only what differs from a base.
func with(f facts, edit func(*facts)) facts { edit(&f); return f }

var fixtureWants = map[string]fixtureWant{
	"debian12": {host: userBase(Host{Kind: KindLinux, Kernel: "6.1.0-28-amd64",
		UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(63432, "63432"), AppArmorEnabled: true}),
		// systemd's binfmt_misc automount and an NFS server's nfsd sit on the kernel's empty directories.
		facts: facts{label: "unconfined", seccomp: "0/0", visible: "/proc", userns: UsernsBuiltIn}},
	"ubuntu2404-restricted": {restricted: true, facts: oldFacts, host: userBase(Host{Kind: KindLinux, Kernel: "6.8.0-31-generic",
		UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(127539, "127539"),
		AppArmorRestrictUserns: set(1, "1"), AppArmorEnabled: true})},
	"ubuntu2404-profile": {restricted: true, profileForUsrBin: "/etc/apparmor.d/bwrap-userns-restrict", facts: oldFacts,
		host: userBase(Host{Kind: KindLinux, Kernel: "6.8.0-31-generic",
			UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(127539, "127539"),
			AppArmorRestrictUserns: set(1, "1"), AppArmorEnabled: true})},
	"wsl1": {blocked: true, unsupported: true, facts: with(oldFacts, func(f *facts) { f.seccomp = "unknown" }),
		host: Host{Kind: KindWSL1, Kernel: "4.4.0-19041-Microsoft", InitialUserNamespace: true}},
	"wsl2-interop": {facts: oldFacts, host: userBase(Host{Kind: KindWSL2, Kernel: "5.15.153.1-microsoft-standard-WSL2",
		MaxUserNamespaces: set(63840, "63840")})},
	"wsl2-interop-late": {facts: oldFacts, host: userBase(Host{Kind: KindWSL2, Kernel: "6.6.87.2-microsoft-standard-WSL2",
		MaxUserNamespaces: set(63840, "63840")})},
	"wsl2-custom-kernel": {facts: with(oldFacts, func(f *facts) { f.seccomp = "unknown" }),
		host: userBase(Host{Kind: KindWSL2, Kernel: "6.12.8-custom+", MaxUserNamespaces: set(63840, "63840")})},
	// sudo -i dropped WSL_DISTRO_NAME and WSL_INTEROP: the interop handler, /run/WSL and the
	// drvfs mount of C: still say WSL2.
	"wsl2-sudo-custom-kernel": {facts: facts{label: "unknown", seccomp: "0/0", visible: "/proc", userns: UsernsBuiltIn},
		host: userBase(Host{Kind: KindWSL2, Kernel: "6.6.36-custom", MaxUserNamespaces: set(63840, "63840"), CapSysAdmin: true})},
	"docker": {facts: with(oldFacts, func(f *facts) { f.runtime, f.seccomp = RuntimeDocker, "2/1" }),
		host: userBase(Host{Kind: KindLinux, Kernel: "6.1.0-28-amd64", Container: ContainerDocker,
			UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(31489, "31489"), AppArmorEnabled: true,
			Seccomp: 2})},
	// The first example: the restriction is on, but this process is under docker-default.
	"docker-ubuntu2404": {restricted: true,
		facts: facts{runtime: RuntimeDocker, label: "docker-default (enforce)", seccomp: "2/1", masks: dockerMasks, visible: "none", userns: UsernsBuiltIn},
		host: userBase(Host{Kind: KindLinux, Kernel: "6.8.0-31-generic", Container: ContainerDocker,
			UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(127539, "127539"),
			AppArmorRestrictUserns: set(1, "1"), AppArmorEnabled: true, Seccomp: 2})},
	"podman": {restricted: true, facts: with(oldFacts, func(f *facts) { f.runtime, f.seccomp = RuntimePodman, "2/1" }),
		host: Host{Kind: KindLinux, Kernel: "6.8.0-31-generic", Container: ContainerPodman,
			UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(127539, "127539"),
			AppArmorRestrictUserns: set(1, "1"), AppArmorEnabled: true, Seccomp: 2}},
	"nerdctl": {facts: facts{runtime: RuntimeContainerd, label: "unknown", seccomp: "2/1", masks: dockerMasks, visible: "none", userns: UsernsBuiltIn},
		host: userBase(Host{Kind: KindLinux, Kernel: "6.6.58-0-lts", Container: ContainerContainerd,
			MaxUserNamespaces: set(63432, "63432"), Seccomp: 2})},
	"kubernetes": {facts: with(oldFacts, func(f *facts) { f.runtime, f.seccomp = RuntimeKubernetes, "2/1" }),
		host: userBase(Host{Kind: KindLinux, Kernel: "5.4.0-1089-azure", Container: ContainerKubernetes,
			UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(63722, "63722"), AppArmorEnabled: true,
			NoNewPrivs: true, Seccomp: 2})},
	// cgroup v2 hides kubepods and the environment was cleared: the kubelet's mounts remain.
	"kubernetes-cgroup2": {facts: facts{runtime: RuntimeKubernetes, label: "unknown", seccomp: "2/1", masks: dockerMasks, visible: "none", userns: UsernsBuiltIn},
		host: userBase(Host{Kind: KindLinux, Kernel: "6.1.112-124.190.amzn2023.x86_64", Container: ContainerKubernetes,
			MaxUserNamespaces: set(127521, "127521"), NoNewPrivs: true, Seccomp: 2})},
	"lxd": {restricted: true, facts: with(oldFacts, func(f *facts) { f.runtime = RuntimeLXD }),
		host: Host{Kind: KindLinux, Kernel: "6.8.0-31-generic", Container: ContainerLXC,
			UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(127539, "127539"),
			AppArmorRestrictUserns: set(1, "1"), AppArmorEnabled: true}},
	// lxcfs covers /proc, but security.nesting=true adds a clean proc at /dev/.lxc/proc.
	"lxd-nesting": {restricted: true,
		facts: facts{runtime: RuntimeLXD, label: "unconfined", seccomp: "0/0", masks: lxcfsMasks, visible: "/dev/.lxc/proc", userns: UsernsBuiltIn},
		host: Host{Kind: KindLinux, Kernel: "6.8.0-31-generic", Container: ContainerLXC,
			UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(127539, "127539"),
			AppArmorRestrictUserns: set(1, "1"), AppArmorEnabled: true}},
	// /dev/lxd as in a container, but the firmware names LXD and nothing proves a container.
	"lxd-vm": {restricted: true, facts: facts{vm: VirtualMachineLXD, label: "unconfined", seccomp: "0/0", visible: "/proc", userns: UsernsBuiltIn},
		host: userBase(Host{Kind: KindLinux, Kernel: "6.8.0-51-generic",
			UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(15601, "15601"),
			AppArmorRestrictUserns: set(1, "1"), AppArmorEnabled: true})},
	"incus": {facts: facts{runtime: RuntimeIncus, label: "unconfined", seccomp: "0/0", masks: lxcfsMasks, visible: "none", userns: UsernsBuiltIn},
		host: Host{Kind: KindLinux, Kernel: "6.12.22+bpo-amd64", Container: ContainerLXC,
			UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(63432, "63432"), AppArmorEnabled: true, CapSysAdmin: true}},
	"proxmox-lxc": {facts: facts{runtime: RuntimeProxmox + "/101", label: "unconfined", seccomp: "2/1",
		masks: append([]string{"/proc/sys", "/proc/sysrq-trigger"}, lxcfsMasks...), visible: "none", userns: UsernsBuiltIn},
		host: Host{Kind: KindLinux, Kernel: "6.8.12-4-pve", Container: ContainerLXC,
			UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(127834, "127834"), AppArmorEnabled: true,
			Seccomp: 2, CapSysAdmin: true}},
	// No systemd inside and cgroup v2: PID 1's container= is the only trace.
	"lxc-pid1-environ": {facts: facts{runtime: RuntimeLXC, label: "lxc-container-default-cgns (enforce)", seccomp: "2/1",
		masks: []string{"/proc/sys", "/proc/sysrq-trigger"}, visible: "none", userns: UsernsBuiltIn},
		host: userBase(Host{Kind: KindLinux, Kernel: "6.1.0-28-amd64", Container: ContainerLXC,
			UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(63432, "63432"), AppArmorEnabled: true,
			Seccomp: 2, CapSysAdmin: true})},
	"crostini": {facts: facts{runtime: RuntimeCrostini, label: "unknown", seccomp: "0/0", visible: "unknown", userns: UsernsBuiltIn},
		host: Host{Kind: KindLinux, Kernel: "6.6.46-06098-g5e6cd8f9d3a4", Container: ContainerLXC, MaxUserNamespaces: set(63712, "63712")}},
	"nspawn": {facts: facts{runtime: RuntimeNspawn, label: "unknown", seccomp: "2/1",
		masks: []string{"/proc/sys", "/proc/sys/kernel/random/boot_id", "/proc/sysrq-trigger"}, visible: "none", userns: UsernsBuiltIn},
		host: userBase(Host{Kind: KindLinux, Kernel: "6.1.0-28-amd64", Container: ContainerNspawn,
			UnprivilegedUsernsClone: set(1, "1"), MaxUserNamespaces: set(63432, "63432"), AppArmorEnabled: true,
			Seccomp: 2, CapSysAdmin: true})},
	"openvz": {blocked: true, facts: facts{runtime: RuntimeOpenVZ, label: "unknown", seccomp: "0/0", visible: "unknown", userns: UsernsBuiltIn},
		host: userBase(Host{Kind: KindLinux, Kernel: "3.10.0-1160.90.1.vz7.200.7", Container: ContainerOpenVZ,
			MaxUserNamespaces: set(0, "0"), CapSysAdmin: true})},
	// gVisor has no /proc/sys/kernel/osrelease (google/gvisor#12487) nor max_user_namespaces
	// (google/gvisor#11210); its /proc/version carries the fixed stamp.
	"gvisor": {facts: facts{runtime: RuntimeDocker, emulation: EmulationGVisor, label: "unknown", seccomp: "0/-1", visible: "/proc"},
		host: userBase(Host{Kind: KindLinux, Container: ContainerDocker})},
	"termux": {blocked: true, facts: facts{android: "android+termux", label: "unknown", seccomp: "2/1", visible: "unknown", userns: UsernsNotBuilt},
		host: userBase(Host{Kind: KindLinux, Kernel: androidBuild, Seccomp: 2})},
	"proot-termux": {blocked: true, facts: facts{emulation: EmulationProot, android: "android+termux", label: "unknown", seccomp: "2/1",
		visible: "unknown", userns: UsernsNotBuilt, tracer: "24090 proot"},
		host: userBase(Host{Kind: KindLinux, Kernel: androidBuild, Seccomp: 2})},
	"userns-disabled-debian": {blocked: true, facts: oldFacts, host: userBase(Host{Kind: KindLinux, Kernel: "4.19.0-27-amd64",
		UnprivilegedUsernsClone: set(0, "0"), MaxUserNamespaces: set(31778, "31778"), AppArmorEnabled: true})},
	"userns-max-zero": {blocked: true, facts: oldFacts, host: userBase(Host{Kind: KindLinux, Kernel: "4.18.0-553.el8_10.x86_64",
		MaxUserNamespaces: set(0, "0"), SELinux: "enforcing"})},
	"userns-module-disabled": {blocked: true, facts: with(oldFacts, func(f *facts) { f.seccomp = "0/-1" }),
		host: Host{Kind: KindLinux, Kernel: "3.10.0-514.el7.x86_64",
			UsernsModuleEnable: set(0, "N"), SELinux: "disabled", InitialUserNamespace: true}},
	// No knob is off, yet no user namespace can exist: /proc/self/ns has no user entry.
	"userns-not-built": {blocked: true, facts: facts{label: "unknown", seccomp: "0/0", visible: "unknown", userns: UsernsNotBuilt},
		host: userBase(Host{Kind: KindLinux, Kernel: "6.6.32-yocto-standard", MaxUserNamespaces: set(31616, "31616")})},
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
			if !reflect.DeepEqual(settingsOf(got), want.host) {
				t.Errorf("Detect:\n got %+v\nwant %+v", settingsOf(got), want.host)
			}
			if gotFacts := factsOf(got); !reflect.DeepEqual(gotFacts, want.facts) {
				t.Errorf("facts:\n got %#v\nwant %#v\nevidence %q", gotFacts, want.facts, got.RuntimeEvidence)
			}
			if (got.Runtime != "" || got.VirtualMachine != "" || got.Emulation != "") && len(got.RuntimeEvidence) == 0 {
				t.Errorf("Runtime %q, VM %q, emulation %q without evidence", got.Runtime, got.VirtualMachine, got.Emulation)
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
			[]string{"/proc/sys/kernel/osrelease: larger than 65536 bytes"},
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

// TestDetectAndroidGOOS: a Go build made on Android (Termux) runs on a Linux kernel: its
// host is read like Linux's, and it is not "another OS".
func TestDetectAndroidGOOS(t *testing.T) {
	t.Parallel()
	host := Detect(debianRoot(), nil, "android", "arm64")
	if host.Kind != KindLinux || host.Kernel == "" || !host.MaxUserNamespaces.Present {
		t.Errorf("Detect(android) = %+v", host)
	}
	if reason, unsupported := host.Unsupported(); unsupported {
		t.Errorf("android reads as unsupported: %s", reason)
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
	environ := func(vars ...string) string { return strings.Join(vars, "\x00") + "\x00" }
	procMount := "24 22 0:22 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
	tests := []struct {
		name      string
		files     map[string]string
		env       map[string]string
		runtime   string
		container string
	}{
		{"nothing", nil, nil, "", ""},
		{"docker on cgroup v1 without .dockerenv", map[string]string{"proc/1/cgroup": dockerV1}, nil, RuntimeDocker, ContainerDocker},
		{"docker only in our own cgroup is not enough", map[string]string{"proc/self/cgroup": dockerV1}, nil, "", ""},
		{"podman variable alone is not a container", nil, map[string]string{"container": "podman"}, "", ""},
		{"lxc variable alone is not a container", nil, map[string]string{"container": "lxc"}, "", ""},
		{"kubernetes variable alone is not a container", nil, map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, "", ""},
		{"podman by PID 1's environ", map[string]string{"proc/1/environ": environ("container=podman", "HOME=/")}, nil, RuntimePodman, ContainerPodman},
		{"lxc by cgroup", map[string]string{"proc/1/cgroup": "4:memory:/lxc/build01\n"}, nil, RuntimeLXC, ContainerLXC},
		{"lxc 4 payload cgroup", map[string]string{"proc/1/cgroup": "0::/lxc.payload.build01/init.scope\n"}, nil, RuntimeLXC, ContainerLXC},
		{"kubernetes variable with a file-proven container", map[string]string{".dockerenv": ""},
			map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, RuntimeKubernetes, ContainerKubernetes},
		{"kubernetes by systemd-driver cgroup", map[string]string{
			"proc/self/cgroup": "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1a2b.slice/cri-containerd-9f8e.scope\n",
			"proc/1/cgroup":    dockerV1}, nil, RuntimeKubernetes, ContainerKubernetes},
		{"kubernetes by the service-account token file", map[string]string{
			"var/run/secrets/kubernetes.io/serviceaccount/token": "eyJhbGciOiJSUzI1NiJ9"}, nil, RuntimeKubernetes, ContainerKubernetes},
		{"kubernetes by the token mount", map[string]string{"proc/self/mountinfo": procMount +
			"40 30 0:53 / /var/run/secrets/kubernetes.io/serviceaccount ro,relatime - tmpfs tmpfs rw,size=7682468k\n"},
			nil, RuntimeKubernetes, ContainerKubernetes},
		{"rkt by PID 1", map[string]string{"proc/1/environ": environ("container=rkt")}, nil, RuntimeRkt, ContainerRkt},
		{"pouch by PID 1", map[string]string{"proc/1/environ": environ("container=pouch")}, nil, RuntimePouch, ContainerPouch},
		{"lxc-libvirt by PID 1", map[string]string{"proc/1/environ": environ("LANG=C", "container=lxc-libvirt")}, nil, RuntimeLXCLibvirt, ContainerLXC},
		{"an unknown manager", map[string]string{"run/systemd/container": "garden\n"}, nil, RuntimeOther, ContainerOther},
		{"oci names no manager: the marker decides", map[string]string{"run/systemd/container": "oci\n", "run/.containerenv": ""}, nil, RuntimePodman, ContainerPodman},
		{"oci without a marker", map[string]string{"run/systemd/container": "oci\n"}, nil, RuntimeOther, ContainerOther},
		{"the manager's file beats a stale .dockerenv", map[string]string{"run/host/container-manager": "systemd-nspawn\n", ".dockerenv": ""},
			nil, RuntimeNspawn, ContainerNspawn},
		{"an empty container-manager file says nothing", map[string]string{"run/host/container-manager": "\n"}, nil, "", ""},
		{"WSL's init names itself", map[string]string{"run/systemd/container": "wsl\n"}, nil, RuntimeWSL, ""},
		{"openvz: /proc/vz without /proc/bc", map[string]string{"proc/vz/veinfo": ""}, nil, RuntimeOpenVZ, ContainerOpenVZ},
		{"openvz host: /proc/vz and /proc/bc", map[string]string{"proc/vz/veinfo": "", "proc/bc/0/resources": ""}, nil, "", ""},
		{"cgroup namespace on cgroup v2", map[string]string{"sys/fs/cgroup/cgroup.events": "populated 1\n",
			"sys/fs/cgroup/cgroup.type": "domain\n"}, nil, RuntimeOther, ContainerOther},
		{"the root cgroup is no namespace", map[string]string{"sys/fs/cgroup/cgroup.procs": "1\n",
			"sys/kernel/cgroup/features": "nsdelegate\n"}, nil, "", ""},
		{"podman's storage in the root overlay", map[string]string{"proc/self/mountinfo": "30 25 0:45 / / rw,relatime - overlay overlay " +
			"rw,lowerdir=/home/dev/.local/share/containers/storage/overlay/l/ABC,upperdir=/home/dev/.local/share/containers/storage/overlay/1f/diff\n" + procMount},
			nil, RuntimePodman, ContainerPodman},
		{"docker's overlays on a host are not its root", map[string]string{"proc/self/mountinfo": "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n" +
			"90 22 0:52 / /var/lib/docker/overlay2/9b0c/merged rw,relatime - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/4OAP\n" + procMount},
			nil, "", ""},
		// This machine kind: a VM whose image kept /.dockerenv (ext4 root, a plain /proc,
		// PID 1 in the root of every v1 hierarchy, the initial user namespace).
		{"a VM whose image left /.dockerenv", map[string]string{".dockerenv": "",
			"proc/self/mountinfo": "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n" + procMount,
			"proc/1/cgroup":       "9:name=systemd:/\n8:pids:/\n0::/\n"}, nil, "", ""},
		{".dockerenv with a masked /proc is docker", map[string]string{".dockerenv": "",
			"proc/self/mountinfo": "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n" + procMount +
				"40 24 0:5 /null /proc/kcore rw,nosuid - devtmpfs udev rw\n",
			"proc/1/cgroup": "9:name=systemd:/\n0::/\n"}, nil, RuntimeDocker, ContainerDocker},
		{".dockerenv on an overlay root is docker", map[string]string{".dockerenv": "",
			"proc/self/mountinfo": "27 1 0:40 / / rw,relatime - overlay overlay rw,lowerdir=/x\n" + procMount,
			"proc/1/cgroup":       "9:name=systemd:/\n0::/\n"}, nil, RuntimeDocker, ContainerDocker},
		// What a user other than root sees in a plain LXC 5.0 container (make hosts): no PID 1
		// environment, a cgroup namespace at "/", LXC's boot id in /dev.
		{"lxc as a user: /dev/.lxc-boot-id", map[string]string{"dev/.lxc-boot-id": "1c7e0e4c-3b4e-4a51-9d0b-5b8e3f1f6a2d\n",
			"proc/1/cgroup": "9:name=systemd:/\n8:pids:/\n0::/\n"}, nil, RuntimeLXC, ContainerLXC},
		{"lxc nesting's /dev/.lxc/proc", map[string]string{"dev/.lxc/proc/version": ""}, nil, RuntimeLXC, ContainerLXC},
		{"lxcfs over /proc", map[string]string{"proc/self/mountinfo": procMount +
			"31 24 0:50 /proc/cpuinfo /proc/cpuinfo rw,nosuid,nodev,relatime - fuse.lxcfs lxcfs rw,user_id=0,group_id=0,allow_other\n"},
			nil, RuntimeLXC, ContainerLXC},
		{"/dev/lxd in the initial user namespace proves nothing", map[string]string{"dev/lxd/sock": ""}, nil, "", ""},
		{"/dev/incus in a shifted user namespace", map[string]string{"dev/incus/sock": "", "proc/self/uid_map": "0 1000000 1000000000\n"},
			nil, RuntimeIncus, ContainerLXC},
		{"Proxmox on LVM", map[string]string{"run/systemd/container": "lxc\n", "proc/self/mountinfo": "900 880 253:7 / / rw,relatime - ext4 " +
			"/dev/mapper/pve-vm--204--disk--0 rw,stripe=16\n" + procMount}, nil, RuntimeProxmox, ContainerLXC},
	}
	for _, test := range tests {
		root := debianRoot()
		for name, data := range test.files {
			root[name] = &fstest.MapFile{Data: []byte(data)}
		}
		host := Detect(root, mapEnv(test.env), "linux", "amd64")
		if host.Runtime != test.runtime || host.Container != test.container {
			t.Errorf("%s: Runtime, Container = %q, %q, want %q, %q (evidence %q)", test.name, host.Runtime, host.Container,
				test.runtime, test.container, host.RuntimeEvidence)
		}
		if host.Runtime != "" && len(host.RuntimeEvidence) == 0 {
			t.Errorf("%s: runtime %q without evidence", test.name, host.Runtime)
		}
		if len(host.Problems) != 0 {
			t.Errorf("%s: Problems = %q", test.name, host.Problems)
		}
	}
}

func TestDetectEmulation(t *testing.T) {
	t.Parallel()
	realVersion := "Linux version 6.1.0-28-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22)\n"
	tests := []struct {
		name      string
		files     map[string]string
		emulation string
		tracer    Tracer
	}{
		{"a real kernel", map[string]string{"proc/version": realVersion}, "", Tracer{}},
		{"gVisor's stamp with a newer release", map[string]string{"proc/version": "Linux version 4.19.0-gvisor #1 SMP Sun Jan 10 15:06:54 PST 2016\n"},
			EmulationGVisor, Tracer{}},
		{"gVisor's release alone", map[string]string{"proc/sys/kernel/osrelease": "4.19.0-gvisor\n"}, EmulationGVisor, Tracer{}},
		{"proot tracer", map[string]string{"proc/self/status": "Name:\tsh\nTracerPid:\t812\nSeccomp:\t0\n", "proc/812/comm": "proot\n"},
			EmulationProot, Tracer{PID: 812, Comm: "proot"}},
		{"strace is a tracer, not an emulator", map[string]string{"proc/self/status": "Name:\tsh\nTracerPid:\t77\nSeccomp:\t0\n", "proc/77/comm": "strace\n"},
			"", Tracer{PID: 77, Comm: "strace"}},
		{"a tracer in another PID namespace", map[string]string{"proc/self/status": "Name:\tsh\nTracerPid:\t4242\nSeccomp:\t0\n"},
			"", Tracer{PID: 4242}},
	}
	for _, test := range tests {
		root := debianRoot()
		for name, data := range test.files {
			root[name] = &fstest.MapFile{Data: []byte(data)}
		}
		host := Detect(root, nil, "linux", "amd64")
		if host.Emulation != test.emulation || host.Tracer != test.tracer {
			t.Errorf("%s: Emulation, Tracer = %q, %+v, want %q, %+v", test.name, host.Emulation, host.Tracer, test.emulation, test.tracer)
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
	// Every Linux this runs on has mountinfo, a Seccomp status line and /proc/self/ns.
	if !host.Proc.Known || len(host.Proc.Mounts) == 0 || !host.SeccompState.Known || host.UsernsBuild.State == "" {
		t.Errorf("Proc %+v, SeccompState %+v, UsernsBuild %+v", host.Proc, host.SeccompState, host.UsernsBuild)
	}
	if len(host.Problems) != 0 {
		t.Errorf("Problems on a live host: %q", host.Problems)
	}
}
