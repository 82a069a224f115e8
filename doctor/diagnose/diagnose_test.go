package diagnose

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/bwrapkit/bwrapkit/doctor/remedy"
	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/platform"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

func stderrFixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(livetest.RepoRoot(), "testdata", "bwrap", "stderr", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func knob(value int64) platform.Knob {
	return platform.Knob{Present: true, Value: value, Raw: strconv.FormatInt(value, 10)}
}

// linuxHost is an ordinary Linux host where nothing blocks user namespaces.
func linuxHost() platform.Host {
	return platform.Host{OS: "linux", Arch: "amd64", Kind: platform.KindLinux, Kernel: "6.1.0-18-amd64",
		UnprivilegedUsernsClone: knob(1), MaxUserNamespaces: platform.Knob{Present: true, Value: 63439, Raw: "63439"},
		InitialUserNamespace: true}
}

// hostFixture is platform.Detect over one of testdata/platform's host trees.
func hostFixture(t testing.TB, name string) platform.Host {
	t.Helper()
	root := filepath.Join(livetest.RepoRoot(), "testdata", "platform", name)
	if _, err := os.Stat(root); err != nil {
		t.Fatal(err)
	}
	return platform.Detect(os.DirFS(root), func(string) string { return "" }, "linux", "amd64")
}

func unconfined() platform.Confinement {
	return platform.Confinement{Known: true, Label: "unconfined", Source: "/proc/self/attr/apparmor/current"}
}

// dockerLikeProc is /proc as Docker, containerd and the kubelet's runc leave it: masks and
// read-only self-binds, no fully visible proc (the mount table of docker-ubuntu2404).
func dockerLikeProc(t *testing.T) platform.ProcView {
	return hostFixture(t, "docker-ubuntu2404").Proc
}

func TestDiagnose(t *testing.T) {
	const bwrap = "/usr/bin/bwrap"
	setup := sandbox.ReasonSetupFailed
	type tweak func(*Facts)
	withHost := func(change func(*platform.Host)) tweak { return func(f *Facts) { change(&f.Host) } }
	cloneOff := withHost(func(h *platform.Host) { h.UnprivilegedUsernsClone = knob(0) })
	nestedNS := withHost(func(h *platform.Host) { h.InitialUserNamespace = false })
	seccompFilter := withHost(func(h *platform.Host) { h.SeccompState = platform.SeccompState{Known: true, Mode: 2, Filters: 1} })
	docker := withHost(func(h *platform.Host) {
		h.Container, h.Runtime = platform.ContainerDocker, platform.RuntimeDocker
		h.SeccompState = platform.SeccompState{Known: true, Mode: 2, Filters: 1}
	})
	restricted := withHost(func(h *platform.Host) {
		h.AppArmorEnabled, h.AppArmorRestrictUserns, h.AppArmorLabel = true, knob(1), unconfined()
	})
	labelUnconfined := withHost(func(h *platform.Host) { h.AppArmorLabel = unconfined() })
	errno := func(e syscall.Errno) tweak { return func(f *Facts) { f.UsernsErr = e } }
	root := func(f *Facts) { f.Root = true }
	on := func(fixture string) tweak {
		return func(f *Facts) {
			if fixture != "" {
				f.Host = hostFixture(t, fixture)
			}
		}
	}
	procOf := func(view func(*testing.T) platform.ProcView) tweak {
		return withHost(func(h *platform.Host) { h.Proc = view(t) })
	}
	refusal := func(reason sandbox.Reason, why string) tweak {
		return func(f *Facts) {
			f.Err = &sandbox.UnavailableError{Reason: reason, Bwrap: f.Bwrap, Err: errors.New(why)}
		}
	}

	tests := []struct {
		name   string
		stderr string // fixture name; "" for none
		reason sandbox.Reason
		tweaks []tweak
		cause  Cause
		remedy []string // substrings the remedy must hold
		never  []string // substrings it must not hold (a remedy for another runtime or place)
	}{
		// kernel.unprivileged_userns_clone = 0: each version's wording, decided by the knob.
		{"debian 0.8.0 knob off", "debian-0.8.0-userns-eperm", setup, []tweak{cloneOff, errno(syscall.EPERM)}, CauseUnprivilegedClone,
			[]string{"sudo sysctl -w kernel.unprivileged_userns_clone=1", "/etc/sysctl.d/90-bwrapkit-userns.conf"}, []string{"on the host"}},
		{"0.12.0 knob off", "static-0.12.0-userns-eperm", setup, []tweak{cloneOff}, CauseUnprivilegedClone, []string{"kernel.unprivileged_userns_clone=1"}, nil},
		{"codex knob off", "codex-userns-eperm", setup, []tweak{cloneOff}, CauseUnprivilegedClone, []string{"kernel.unprivileged_userns_clone=1"}, nil},
		{"pre-0.11.1 wording knob off", "reference-old-userns-eperm", setup, []tweak{cloneOff}, CauseUnprivilegedClone, []string{"kernel.unprivileged_userns_clone=1"}, nil},
		{"knob off as root: no sudo", "debian-0.8.0-userns-eperm", setup, []tweak{cloneOff, root}, CauseUnprivilegedClone, []string{"\nsysctl -w kernel.unprivileged_userns_clone=1"}, nil},
		{"debian knob off in a docker container: on the host", "debian-0.8.0-userns-eperm", setup, []tweak{on("userns-disabled-debian"), docker, errno(syscall.EPERM)},
			CauseUnprivilegedClone, []string{"on the host (not inside this docker container): ", "sysctl -w kernel.unprivileged_userns_clone=1"}, nil},
		// EPERM from the doctor's own clone: the confinement decides, not the text.
		{"0.11.1 in docker: seccomp behind a misleading text", "bwrap-0.11.1-docker-userns-eperm", setup, []tweak{docker, errno(syscall.EPERM)}, CauseContainer,
			[]string{"on the host", "docker run --security-opt seccomp=unconfined <image>"}, []string{"apparmor=unconfined", "sysctl"}},
		{"docker on Ubuntu 24.04: docker-default, not the userns restriction", "bwrap-0.11.1-docker-userns-eperm", setup, []tweak{on("docker-ubuntu2404"), errno(syscall.EPERM)}, CauseContainer,
			[]string{"on the host", "--security-opt seccomp=unconfined --security-opt apparmor=unconfined"}, []string{"apparmor_parser", "/etc/apparmor.d", "apparmor_restrict_unprivileged_userns=0"}},
		{"docker as root, text only", "reference-container-eperm", setup, []tweak{docker, root}, CauseContainer, []string{"seccomp=unconfined"}, nil},
		{"seccomp outside a container", "static-0.12.0-userns-eperm", setup, []tweak{seccompFilter, errno(syscall.EPERM)}, CauseSeccomp, []string{"RestrictNamespaces="}, nil},
		{"chroot: EPERM no knob explains", "debian-0.8.0-userns-eperm", setup, []tweak{errno(syscall.EPERM)}, CauseUsernsDenied, []string{"chroot"}, nil},
		{"EPERM text alone", "codex-userns-eperm", setup, nil, CauseUsernsDenied, []string{"chroot"}, nil},
		// ENOSPC: nested inside a sandbox, or the limit; 0.4-0.6 printed only strerror's words.
		{"0.4 ENOSPC as strerror (bubblewrap#371)", "bwrap-0.4-userns-enospc", setup, nil, CauseUsernsLimit, []string{"user.max_user_namespaces=15000"}, nil},
		{"0.4 ENOSPC nested", "bwrap-0.4-userns-enospc", setup, []tweak{nestedNS}, CauseNested, []string{"outside the enclosing sandbox"}, nil},
		{"0.5 second namespace ENOSPC (bubblewrap#465)", "bwrap-0.5-inner-userns-enospc", setup, []tweak{nestedNS}, CauseNested, []string{"outside"}, nil},
		{"debian 0.8.0 nested", "debian-0.8.0-nested-enospc", setup, []tweak{nestedNS, errno(syscall.ENOSPC)}, CauseNested, []string{"outside the enclosing sandbox"}, nil},
		{"0.11 nested (bubblewrap#764)", "bwrap-0.11-nested-enospc", setup, []tweak{nestedNS}, CauseNested, []string{"outside"}, nil},
		{"0.12.0 nested", "static-0.12.0-nested-enospc", setup, []tweak{nestedNS, errno(syscall.ENOSPC)}, CauseNested, []string{"outside"}, nil},
		{"codex nested, text only", "codex-nested-enospc", setup, []tweak{nestedNS}, CauseNested, []string{"outside"}, nil},
		{"limit 0", "debian-0.8.0-nested-enospc", setup, []tweak{withHost(func(h *platform.Host) { h.MaxUserNamespaces = knob(0) })}, CauseUsernsLimit,
			[]string{"sudo sysctl -w user.max_user_namespaces=15000", "/etc/sysctl.d/"}, nil},
		{"limit 0 in a podman container", "debian-0.8.0-nested-enospc", setup, []tweak{on("userns-max-zero"), withHost(func(h *platform.Host) { h.Container, h.Runtime = "podman", "podman" })},
			CauseUsernsLimit, []string{"on the host (not inside this podman container)"}, nil},
		{"limit reached in the initial namespace", "static-0.12.0-nested-enospc", setup, []tweak{errno(syscall.ENOSPC)}, CauseUsernsLimit, []string{"user.max_user_namespaces"}, nil},
		// 0.9+'s mount ENOSPC is fs.mount-max, not a user namespace limit.
		{"0.11 mount-max", "bwrap-0.11-proc-mount-max", setup, []tweak{nestedNS}, CauseMountLimit, []string{"fs.mount-max=100000"}, []string{"max_user_namespaces"}},
		// No user namespaces in the kernel: the boot flag only where the module parameter says N.
		{"RHEL 7 disabled at boot", "reference-no-userns-einval", setup, []tweak{on("userns-module-disabled")}, CauseUsernsOff, []string{"user_namespace.enable=1"}, nil},
		{"built without CONFIG_USER_NS", "reference-no-userns-einval", setup, []tweak{on("userns-not-built"), errno(syscall.EINVAL)}, CauseUsernsNotBuilt,
			[]string{"CONFIG_USER_NS=y"}, []string{"grubby", "user_namespace.enable"}},
		{"EINVAL", "reference-no-userns-einval", setup, []tweak{errno(syscall.EINVAL)}, CauseUsernsNotBuilt, []string{"CONFIG_USER_NS=y"}, []string{"grubby"}},
		{"0.12.0 wording, text only", "bwrap-0.12.0-no-userns-einval", setup, nil, CauseUsernsNotBuilt, []string{"CONFIG_USER_NS=y"}, nil},
		// Ubuntu's AppArmor restriction: only for an unconfined label.
		{"apparmor uid map (Conty#139)", "ubuntu2404-apparmor-uid-map", setup, []tweak{on("ubuntu2404-restricted"), labelUnconfined}, CauseAppArmor, []string{
			"'profile bwrapkit-usr.bin.bwrap /usr/bin/bwrap flags=(unconfined) {' '  userns,'",
			"| sudo tee /etc/apparmor.d/bwrapkit-usr.bin.bwrap >/dev/null",
			"sudo apparmor_parser -r /etc/apparmor.d/bwrapkit-usr.bin.bwrap", "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"}, []string{"on the host"}},
		{"apparmor loopback", "reference-apparmor-loopback", setup, []tweak{restricted}, CauseAppArmor, []string{"apparmor_parser -r"}, nil},
		{"apparmor, profile file not loaded", "reference-apparmor-uid-map", setup, []tweak{restricted, func(f *Facts) { f.AppArmorProfile = "/etc/apparmor.d/bwrap-userns-restrict" }},
			CauseAppArmor, []string{"sudo apparmor_parser -r /etc/apparmor.d/bwrap-userns-restrict"}, []string{"tee"}},
		{"apparmor restriction but label unknown: no name", "reference-apparmor-uid-map", setup, []tweak{on("ubuntu2404-restricted")}, CauseUnknown, nil, []string{"apparmor_parser"}},
		{"apparmor text only", "reference-apparmor-uid-map", setup, nil, CauseUnknown, nil, []string{"apparmor"}},
		{"uid map in gVisor: AppArmor is not even on", "ubuntu2404-apparmor-uid-map", setup, []tweak{on("gvisor")}, CauseUnknown, []string{"--runtime=runc"}, []string{"apparmor"}},
		{"uid map EPERM under hidepid (bwrap 0.1, bubblewrap#198)", "bwrap-0.1-hidepid-uid-map-eperm", setup, nil, CauseUnknown, nil, []string{"apparmor"}},
		{"WSL2 after sudo -i, uid map: not AppArmor, not WSL1", "ubuntu2404-apparmor-uid-map", setup, []tweak{on("wsl2-sudo-custom-kernel")}, CauseUnknown, nil, []string{"apparmor", "WSL2"}},
		{"LXD VM is its own kernel: no nesting remedy", "ubuntu2404-apparmor-uid-map", setup, []tweak{on("lxd-vm")}, CauseAppArmor, []string{"apparmor_parser -r"}, []string{"on the host", "security.nesting"}},
		// The docker-default profile denies mounts: "Failed to make / slave".
		{"0.6.1 in docker on Ubuntu 24.04 (codex#23468)", "bwrap-0.6.1-container-slave-eacces", setup, []tweak{on("docker-ubuntu2404")}, CauseContainerMount,
			[]string{"on the host", "docker run --security-opt apparmor=unconfined <image>"}, []string{"apparmor_parser", "unmask"}},
		{"0.11 slave EPERM under docker's seccomp", "bwrap-0.11-slave-eperm", setup, []tweak{docker}, CauseContainerMount, []string{"seccomp=unconfined"}, nil},
		{"slave EACCES with no confinement known", "bwrap-0.6.1-container-slave-eacces", setup, []tweak{docker, withHost(func(h *platform.Host) { h.SeccompState.Mode = 0 })}, CauseUnknown, nil, nil},
		// A masked /proc: only where no proc mount is fully visible; the remedy is the runtime's.
		{"debian proc masked in docker", "debian-0.8.0-proc-masked", setup, []tweak{on("docker-ubuntu2404")}, CauseProcMasked,
			[]string{"on the host", "docker run --security-opt apparmor=unconfined --security-opt systempaths=unconfined <image>"}, []string{"unmask=ALL"}},
		{"0.12.0 in podman (codex#44304)", "bwrap-0.12.0-podman-proc-eperm", setup, []tweak{docker, withHost(func(h *platform.Host) { h.Container, h.Runtime = "podman", "podman" }), procOf(dockerLikeProc)},
			CauseProcMasked, []string{"podman run --security-opt unmask=ALL <image>"}, []string{"systempaths"}},
		{"nerdctl", "static-0.12.0-proc-masked", setup, []tweak{on("nerdctl")}, CauseProcMasked, []string{"nerdctl run --security-opt systempaths=unconfined"}, nil},
		{"kubernetes on cgroup v2", "bwrap-0.12.0-podman-proc-eperm", setup, []tweak{on("kubernetes-cgroup2")}, CauseProcMasked, []string{"procMount: Unmasked", "hostUsers: false"}, []string{"--security-opt"}},
		{"proxmox", "codex-proc-masked", setup, []tweak{on("proxmox-lxc")}, CauseProcMasked, []string{"pct set 101 --features nesting=1", "pct reboot 101"}, []string{"--security-opt"}},
		{"incus without nesting", "static-0.12.0-proc-masked", setup, []tweak{on("incus")}, CauseProcMasked, []string{"incus config set <container> security.nesting=true"}, nil},
		{"crostini, flatpak 1.7 (flatpak#3644)", "bwrap-0.4-crostini-proc-eperm", setup, []tweak{on("crostini"), procOf(func(t *testing.T) platform.ProcView { return hostFixture(t, "incus").Proc })},
			CauseProcMasked, []string{"vsh termina", "lxc config set penguin security.nesting true"}, []string{"--security-opt"}},
		{"nspawn proc (bubblewrap#707)", "nspawn-proc-eperm", setup, []tweak{on("nspawn")}, CauseProcMasked, []string{"mount -t proc proc /run/bwrapkit-proc", "writable /proc/sys"}, []string{"--security-opt"}},
		{"plain LXC by PID 1's environ", "codex-proc-masked", setup, []tweak{on("lxc-pid1-environ")}, CauseProcMasked, []string{"nesting.conf"}, nil},
		{"systemd ProtectKernelTunables outside a container (cprussin/dotfiles#44)", "bwrap-systemd-protectkerneltunables-proc-eacces", setup, []tweak{procOf(dockerLikeProc)},
			CauseProcMasked, []string{"ProtectKernelTunables="}, []string{"--security-opt", "on the host"}},
		{"LXD nesting: /dev/.lxc/proc is visible, masks are not the cause", "static-0.12.0-proc-masked", setup, []tweak{on("lxd-nesting")}, CauseUnknown, nil, []string{"security.nesting", "--security-opt"}},
		{"no proc mounted at all (a build root)", "debian-0.8.0-proc-masked", setup, []tweak{withHost(func(h *platform.Host) { h.Proc = platform.ProcView{Known: true} })},
			CauseProcMasked, []string{"mount -t proc proc /proc"}, []string{"--security-opt"}},
		{"proc text, mount table unreadable", "codex-proc-masked", setup, []tweak{docker}, CauseUnknown, nil, []string{"--security-opt"}},
		// bwrapkit's --disable-userns, refused by the host: bwrapkit's requirement, said so.
		{"nspawn read-only /proc/sys (bubblewrap#707)", "nspawn-disable-userns-erofs", setup, []tweak{on("nspawn")}, CauseDisableUserns,
			[]string{"SYSTEMD_NSPAWN_API_VFS_WRITABLE=1", "mount -o remount,rw /proc/sys"}, []string{"--security-opt", "unmask"}},
		{"nspawn --private-users: the remount inside, not the host's variable", "nspawn-disable-userns-erofs", setup, []tweak{on("nspawn"), nestedNS}, CauseDisableUserns,
			[]string{"mount -o remount,rw /proc/sys", "does not apply with --private-users"}, []string{"systemctl edit"}},
		{"docker read-only /proc/sys", "nspawn-disable-userns-erofs", setup, []tweak{on("docker-ubuntu2404")}, CauseDisableUserns, []string{"systempaths=unconfined"}, nil},
		{"incus AppArmor policy (lxc/incus#1937)", "incus-disable-userns-eacces", setup, []tweak{on("incus")}, CauseDisableUserns, []string{"on the host, upgrade Incus"}, []string{"security.nesting"}},
		{"gVisor has no max_user_namespaces (google/gvisor#11210)", "gvisor-disable-userns-enoent", setup, []tweak{on("gvisor")}, CauseDisableUserns, []string{"no fix inside gVisor"}, nil},
		{"AlmaLinux EACCES nobody explained (bubblewrap#798)", "incus-disable-userns-eacces", setup, []tweak{on("debian12")}, CauseDisableUserns, []string{"dmesg"}, []string{"Incus"}},
		// Emulation and Android: nothing to set in place, said plainly.
		{"termux", "codex-userns-eperm", setup, []tweak{on("termux"), errno(syscall.EPERM)}, CauseEmulated, []string{"no fix inside Termux"}, nil},
		{"proot in termux", "static-0.12.0-userns-eperm", setup, []tweak{on("proot-termux"), errno(syscall.EPERM)}, CauseEmulated, []string{"no fix inside proot"}, nil},
		// bwrapkit's own refusals are bwrapkit's, whatever the host looks like.
		{"hardening refused on a docker host", "", sandbox.ReasonHardening, []tweak{on("docker-ubuntu2404"), refusal(sandbox.ReasonHardening, "the seccomp filter could not be installed")},
			CauseRefused, []string{"which part of the boundary"}, []string{"apparmor", "--security-opt"}},
		{"untrusted bwrap in nspawn", "", sandbox.ReasonUntrusted, []tweak{on("nspawn"), refusal(sandbox.ReasonUntrusted, "/tmp/bwrap is writable by uid 1000")},
			CauseRefused, []string{"bwrapkit install"}, []string{"mount -t proc"}},
		// The gate lost sight of a sandbox bwrap was still building when bwrap died: bwrap's
		// own failure decides, the gate's "unverified" only for a sandbox that was built.
		{"gate unverified, bwrap refused proc in docker", "debian-0.8.0-proc-masked", sandbox.ReasonUnverified,
			[]tweak{on("docker-ubuntu2404"), refusal(sandbox.ReasonUnverified, "cannot inspect the sandbox being built (/proc/42/root): no such file or directory")},
			CauseProcMasked, []string{"systempaths=unconfined"}, []string{"another sandbox", "run again"}},
		{"gate unverified, 0.12.0 refused proc in podman", "bwrap-0.12.0-podman-proc-eperm", sandbox.ReasonUnverified,
			[]tweak{docker, withHost(func(h *platform.Host) { h.Container, h.Runtime = "podman", "podman" }), procOf(dockerLikeProc),
				refusal(sandbox.ReasonUnverified, "cannot inspect the sandbox being built (/proc/42/root): no such process")},
			CauseProcMasked, []string{"unmask=ALL"}, []string{"another sandbox"}},
		{"gate unverified, codex refused proc in lxc", "codex-proc-masked", sandbox.ReasonUnverified,
			[]tweak{on("lxc-pid1-environ"), refusal(sandbox.ReasonUnverified, "cannot inspect the sandbox being built (/proc/42/root)")},
			CauseProcMasked, []string{"nesting.conf"}, nil},
		{"limits lost the child that died at pivot_root (docker --cap-add SYS_ADMIN as nobody)", "debian-0.8.0-docker-sys-admin-pivot-root", sandbox.ReasonHardening,
			[]tweak{docker, procOf(dockerLikeProc), refusal(sandbox.ReasonHardening, "cannot set as=unlimited on the sandbox (pid 50): operation not permitted")},
			CauseContainerMount, []string{"seccomp=unconfined --security-opt systempaths=unconfined"}, []string{"which part of the boundary"}},
		{"gate unverified, nothing from bwrap: the gate's own", "", sandbox.ReasonUnverified,
			[]tweak{refusal(sandbox.ReasonUnverified, "inside the sandbox, /work is not the directory that was checked")},
			CauseRefused, nil, []string{"proc"}},
		// A chroot without /proc: bwrap 0.12.0 fails even --help; not an impostor.
		{"chroot without proc: --help fails on overflowuid", "static-0.12.0-chroot-no-proc", sandbox.ReasonUnsupported,
			[]tweak{func(f *Facts) { f.Missing = sandbox.Required(); f.Host.Proc = platform.ProcView{} }}, CauseProcMasked,
			[]string{"sudo mount -t proc proc /proc"}, []string{"bwrapkit install", "impostor"}},
		{"the same text where proc is mounted: bwrapkit cannot tell", "static-0.12.0-chroot-no-proc", sandbox.ReasonUnsupported,
			[]tweak{func(f *Facts) { f.Missing = sandbox.Required(); f.Host.Proc = hostFixture(t, "debian12").Proc }}, CauseNotBwrap, nil, nil},
		// exec of bwrap itself: only ENOEXEC and EACCES are the binary's fault.
		{"start: EMFILE is not the architecture", "", sandbox.ReasonStartFailed,
			[]tweak{func(f *Facts) {
				f.Err = &sandbox.UnavailableError{Reason: sandbox.ReasonStartFailed, Err: &os.PathError{Op: "fork/exec", Path: f.Bwrap, Err: syscall.EMFILE}}
			}},
			CauseStartFailed, []string{"file descriptors"}, []string{"architecture", "bwrapkit install"}},
		{"start: ENOEXEC is the architecture", "", sandbox.ReasonStartFailed,
			[]tweak{func(f *Facts) {
				f.Err = &sandbox.UnavailableError{Reason: sandbox.ReasonStartFailed, Err: &os.PathError{Op: "fork/exec", Path: f.Bwrap, Err: syscall.ENOEXEC}}
			}},
			CauseStartFailed, []string{"bwrapkit install"}, nil},
		// Docker 20.10 as make hosts runs it: bwrap stops at the first refusal, the remedy
		// must lift every one the facts show (the filter, then the masked /proc).
		{"docker default: the filter and the masks, both", "debian-0.8.0-docker-default-userns", setup, []tweak{docker, procOf(dockerLikeProc), errno(syscall.EPERM)},
			CauseContainer, []string{"docker run --security-opt seccomp=unconfined --security-opt systempaths=unconfined <image>"}, []string{"unmask"}},
		{"docker --cap-add SYS_ADMIN: pivot_root is the filter's", "debian-0.8.0-docker-sys-admin-pivot-root", setup, []tweak{docker, procOf(dockerLikeProc), root},
			CauseContainerMount, []string{"docker run --security-opt seccomp=unconfined --security-opt systempaths=unconfined <image>"}, []string{"dmesg"}},
		{"pivot_root outside a container: no name", "debian-0.8.0-docker-sys-admin-pivot-root", setup, nil, CauseUnknown, nil, []string{"--security-opt"}},
		// Setuid.
		{"0.12.0 setuid", "static-0.12.0-setuid", setup, []tweak{func(f *Facts) { f.Setuid = true }}, CauseSetuidUnsupported, []string{"sudo chmod u-s /usr/bin/bwrap"}, nil},
		{"codex setuid refuses even --help", "codex-setuid", sandbox.ReasonUnsupported, []tweak{func(f *Facts) { f.Setuid, f.Missing = true, sandbox.Required() }}, CauseSetuidUnsupported, []string{"chmod u-s"}, nil},
		// Not bwrap, or none.
		{"impostor", "impostor-true", sandbox.ReasonNoLaunchProof, nil, CauseNotBwrap, []string{"bwrapkit install"}, nil},
		{"impostor by --help", "impostor-true", sandbox.ReasonUnsupported, []tweak{func(f *Facts) { f.Missing = sandbox.Required() }}, CauseNotBwrap, []string{"bwrapkit install"}, nil},
		{"too old", "", sandbox.ReasonUnsupported, []tweak{func(f *Facts) { f.Missing = []string{"json-status-fd"} }}, CauseMissingOptions, []string{"bwrapkit install"}, nil},
		{"not found", "", sandbox.ReasonNotFound, nil, CauseNoBwrap, []string{"bwrapkit install"}, nil},
		{"hang", "", sandbox.ReasonLaunchTimeout, nil, CauseLaunchTimeout, []string{"stuck mount"}, nil},
		{"something new", "", setup, []tweak{func(f *Facts) { f.Stderr = "bwrap: Something new: Bad address\n" }}, CauseUnknown, []string{"bwrap's message"}, nil},
		// Other platforms.
		{"wsl1", "", sandbox.ReasonSetupFailed, []tweak{on("wsl1"), func(f *Facts) { f.Distro = "Debian" }}, CauseWSL1, []string{"wsl --set-version Debian 2"}, nil},
		{"darwin", "", sandbox.ReasonNotFound, []tweak{withHost(func(h *platform.Host) { h.OS, h.Kind = "darwin", platform.KindDarwin })}, CauseUnsupportedOS, []string{"Linux"}, nil},
		{"windows", "", sandbox.ReasonNotFound, []tweak{withHost(func(h *platform.Host) { h.OS, h.Kind = "windows", platform.KindWindows })}, CauseUnsupportedOS, []string{"WSL2"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			facts := Facts{Host: linuxHost(), Bwrap: bwrap, Reason: tc.reason}
			if tc.stderr != "" {
				facts.Stderr = stderrFixture(t, tc.stderr)
			}
			for _, change := range tc.tweaks {
				change(&facts)
			}
			diagnosis := Diagnose(facts)
			if diagnosis.Cause != tc.cause {
				t.Fatalf("cause %s, want %s (%s)\nevidence: %s", diagnosis.Cause, tc.cause, diagnosis.Summary, strings.Join(diagnosis.Evidence, "; "))
			}
			if diagnosis.Summary == "" || diagnosis.Remedy == "" {
				t.Errorf("empty summary or remedy: %+v", diagnosis)
			}
			for _, want := range tc.remedy {
				if !strings.Contains(diagnosis.Remedy, want) {
					t.Errorf("remedy lacks %q:\n%s", want, diagnosis.Remedy)
				}
			}
			for _, unwanted := range tc.never {
				if strings.Contains(strings.ToLower(diagnosis.Remedy+"\n"+diagnosis.Summary), strings.ToLower(unwanted)) {
					t.Errorf("remedy or summary holds %q, wrong for this host:\n%s\n%s", unwanted, diagnosis.Summary, diagnosis.Remedy)
				}
			}
			if facts.Root && strings.Contains(diagnosis.Remedy, "sudo ") {
				t.Errorf("remedy for root says sudo:\n%s", diagnosis.Remedy)
			}
			for _, command := range diagnosis.RemedyCommands() {
				if !strings.Contains(diagnosis.Remedy, command) {
					t.Errorf("remedy_commands holds %q, which the remedy text does not show:\n%s", command, diagnosis.Remedy)
				}
			}
			if diagnosis.Cause == CauseUnknown && len(diagnosis.Evidence) < 2 {
				t.Errorf("an unknown cause must show the facts: %q", diagnosis.Evidence)
			}
		})
	}
}

// TestContainerRemediesAreForTheHost: whatever the runtime, a sysctl or AppArmor remedy given
// inside a container says it is for the host and is never offered to --fix, which would
// change the container's view (or, in a privileged one, the host by surprise).
func TestContainerRemediesAreForTheHost(t *testing.T) {
	runtimes := []string{platform.RuntimeDocker, platform.RuntimePodman, platform.RuntimeContainerd, platform.RuntimeKubernetes,
		platform.RuntimeLXC, platform.RuntimeLXD, platform.RuntimeIncus, platform.RuntimeProxmox, platform.RuntimeCrostini,
		platform.RuntimeNspawn, platform.RuntimeOpenVZ, platform.RuntimeRkt, platform.RuntimePouch, platform.RuntimeOther}
	for _, runtime := range runtimes {
		host := linuxHost()
		host.Runtime = runtime
		host.Container = map[string]string{platform.RuntimeLXD: "lxc", platform.RuntimeIncus: "lxc", platform.RuntimeProxmox: "lxc", platform.RuntimeCrostini: "lxc"}[runtime]
		if host.Container == "" {
			host.Container = runtime
		}
		for _, facts := range []Facts{
			{Host: withKnob(host, func(h *platform.Host) { h.MaxUserNamespaces = knob(0) }), Bwrap: "/usr/bin/bwrap"},
			{Host: withKnob(host, func(h *platform.Host) { h.UnprivilegedUsernsClone = knob(0) }), Bwrap: "/usr/bin/bwrap"},
			{Host: withKnob(host, func(h *platform.Host) {
				h.AppArmorEnabled, h.AppArmorRestrictUserns, h.AppArmorLabel = true, knob(1), unconfined()
			}), Bwrap: "/usr/bin/bwrap", Reason: sandbox.ReasonSetupFailed, Stderr: "bwrap: setting up uid map: Permission denied\n"},
			{Host: withKnob(host, func(h *platform.Host) { h.UsernsModuleEnable = knob(0) }), Bwrap: "/usr/bin/bwrap"},
		} {
			diagnosis := Diagnose(facts)
			want := "on the host (not inside this " + runtime + " container)"
			if runtime == platform.RuntimeOther {
				want = "on the host (not inside this container)"
			}
			if !strings.HasPrefix(diagnosis.Remedy, want) {
				t.Errorf("%s, %s: remedy does not start with where it runs:\n%s", runtime, diagnosis.Cause, diagnosis.Remedy)
			}
			if diagnosis.Fix != nil {
				t.Errorf("%s, %s: a fix --fix would apply inside the container: %+v", runtime, diagnosis.Cause, diagnosis.Fix)
			}
			if len(diagnosis.RemedyCommands()) == 0 {
				t.Errorf("%s, %s: no remedy_commands", runtime, diagnosis.Cause)
			}
		}
	}
}

func withKnob(host platform.Host, change func(*platform.Host)) platform.Host {
	change(&host)
	return host
}

// TestUnreadableProcFiles: a /proc file that is missing, empty, huge or a FIFO leaves its
// fact unknown, and the diagnosis says what it could not read instead of naming a cause.
func TestUnreadableProcFiles(t *testing.T) {
	for _, shape := range []string{"missing", "empty", "huge", "fifo", "directory"} {
		t.Run(shape, func(t *testing.T) {
			root := t.TempDir()
			mustWrite(t, root, "proc/sys/kernel/osrelease", "6.8.0-45-generic\n")
			mustWrite(t, root, "proc/self/status", "Name:\tbwrapkit\nSeccomp:\t2\nSeccomp_filters:\t1\n")
			mustWrite(t, root, "proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1\n")
			mustWrite(t, root, "sys/module/apparmor/parameters/enabled", "Y\n")
			mustWrite(t, root, ".dockerenv", "")
			for _, name := range []string{"proc/self/mountinfo", "proc/self/attr/apparmor/current"} {
				path := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				switch shape {
				case "empty":
					mustWrite(t, root, name, "")
				case "huge":
					mustWrite(t, root, name, strings.Repeat("x", 5<<20))
				case "fifo":
					if err := syscall.Mkfifo(path, 0o644); err != nil {
						t.Fatal(err)
					}
				case "directory":
					if err := os.Mkdir(path, 0o755); err != nil {
						t.Fatal(err)
					}
				}
			}
			host := platform.Detect(os.DirFS(root), nil, "linux", "amd64")
			if host.Proc.Known || host.AppArmorLabel.Known {
				t.Fatalf("facts known from a %s file: proc %+v, label %+v", shape, host.Proc, host.AppArmorLabel)
			}
			for _, stderr := range []string{"codex-proc-masked", "reference-apparmor-uid-map"} {
				facts := Facts{Host: host, Bwrap: "/usr/bin/bwrap", Reason: sandbox.ReasonSetupFailed, Stderr: stderrFixture(t, stderr)}
				diagnosis := Diagnose(facts)
				if diagnosis.Cause != CauseUnknown {
					t.Errorf("%s: cause %s from a %s file, want unknown", stderr, diagnosis.Cause, shape)
				}
				text := diagnosis.Summary + "\n" + strings.Join(diagnosis.Evidence, "\n")
				if !strings.Contains(text, "/proc/self/mountinfo") || !strings.Contains(text, "AppArmor label of this process: unknown") && shape != "missing" {
					t.Errorf("%s: the diagnosis does not say what it could not read:\n%s", stderr, text)
				}
			}
		})
	}
}

func mustWrite(t *testing.T, root, name, content string) {
	t.Helper()
	path := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestParseFailure: the step, path and errno of each generation's texts.
func TestParseFailure(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		step    Step
		path    string
		errno   string
	}{
		{"bwrap-0.1-hidepid-uid-map-eperm", StepUIDMap, "", "Operation not permitted"},
		{"bwrap-0.4-userns-enospc", StepUserns, "", "No space left on device"},
		{"bwrap-0.4-crostini-proc-eperm", StepProc, "/newroot/proc", "Operation not permitted"},
		{"bwrap-0.5-inner-userns-enospc", StepInnerUserns, "", "No space left on device"},
		{"bwrap-0.6.1-container-slave-eacces", StepSlave, "/", "Permission denied"},
		{"debian-0.8.0-userns-eperm", StepUserns, "", ""},
		{"debian-0.8.0-proc-masked", StepProc, "/newroot/proc", "Operation not permitted"},
		{"nspawn-disable-userns-erofs", StepDisableUserns, "/proc/sys/user/max_user_namespaces", "Read-only file system"},
		{"bwrap-0.11-proc-mount-max", StepProc, "/newroot/proc", "No space left on device"},
		{"bwrap-0.11-nested-enospc", StepUserns, "", "No space left on device"},
		{"bwrap-0.11.1-docker-userns-eperm", StepUserns, "", ""},
		{"static-0.12.0-proc-masked", StepProc, "/proc", "Operation not permitted"},
		{"bwrap-0.12.0-no-userns-einval", StepUserns, "", ""},
		{"static-0.12.0-setuid", StepSetuid, "", ""},
		{"reference-apparmor-loopback", StepLoopback, "", "Operation not permitted"},
		{"impostor-true", StepNone, "", ""},
	} {
		got := ParseFailure(stderrFixture(t, tc.fixture))
		if got.Step != tc.step || got.Path != tc.path || got.Errno != tc.errno {
			t.Errorf("%s: %+v, want step %q path %q errno %q", tc.fixture, got, tc.step, tc.path, tc.errno)
		}
	}
	if f := ParseFailure("bwrap: Can't mount proc on /newroot/proc: Limit exceeded (ENOSPC). (Hint: Check that /proc/sys/fs/mount-max is sufficient, typically 100000)"); !f.MountLimit || f.ENOSPC {
		t.Errorf("mount-max: %+v", f)
	}
	// A wrapper's prefix, and a line of someone else's without bwrap's words.
	if f := ParseFailure("pressure-vessel-wrap[13]: E: Child process exited with code 1: bwrap: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)"); !f.ENOSPC {
		t.Errorf("wrapped: %+v", f)
	}
	if f := ParseFailure("Segmentation fault\n"); f.Step != StepNone {
		t.Errorf("not bwrap's: %+v", f)
	}
}

// TestAppArmorRemedyIsTheFixedProfile: the remedy printed for the AppArmor cause writes
// exactly the profile `doctor --fix` would, so following either leaves the same file.
func TestAppArmorRemedyIsTheFixedProfile(t *testing.T) {
	for _, path := range []string{"/usr/bin/bwrap", "/usr/local/lib/bwrapkit/versions/253c70372599ac19/bwrap", "/opt/my tools/bwrap"} {
		profile, err := remedy.NewAppArmorProfile(path)
		if err != nil {
			t.Fatal(err)
		}
		diagnosis := AppArmor(Facts{Bwrap: path})
		if diagnosis.Fix == nil || diagnosis.Fix.File != profile.File || diagnosis.Fix.Content != profile.Content {
			t.Errorf("%s: fix %+v, want the profile %s", path, diagnosis.Fix, profile.File)
		}
		if !strings.Contains(diagnosis.Remedy, "apparmor_parser -r "+profile.File) || !strings.Contains(diagnosis.Remedy, "tee "+profile.File) {
			t.Errorf("%s: remedy does not write and load %s:\n%s", path, profile.File, diagnosis.Remedy)
		}
	}
	// A path AppArmor could only match as a pattern gets advice, never a wider grant.
	if diagnosis := AppArmor(Facts{Bwrap: "/opt/b*/bwrap"}); diagnosis.Fix == nil || diagnosis.Fix.File != "" || diagnosis.Remedy == "" {
		t.Errorf("glob path: %+v", diagnosis)
	}
}

// TestSysctlRemedyWritesWhatFixOwns: the printed sysctl remedy, run by a shell, writes the
// drop-in --fix writes, with its mark, so a later --fix merges into it instead of refusing.
func TestSysctlRemedyWritesWhatFixOwns(t *testing.T) {
	for _, tc := range []struct {
		diagnosis Diagnosis
		setting   remedy.SysctlSetting
	}{
		{usernsLimit(Facts{Bwrap: "/usr/bin/bwrap"}, "test"), remedy.SysctlSetting{Key: "user.max_user_namespaces", Value: "15000"}},
		{unprivilegedClone(Facts{Bwrap: "/usr/bin/bwrap", Root: true}, "test"), remedy.SysctlSetting{Key: "kernel.unprivileged_userns_clone", Value: "1"}},
	} {
		fix := tc.diagnosis.Fix
		if fix == nil || fix.File != remedy.SysctlFile {
			t.Fatalf("%s: fix %+v, want one writing %s", tc.diagnosis.Cause, fix, remedy.SysctlFile)
		}
		var printed string
		for _, command := range fix.Commands {
			if !strings.Contains(tc.diagnosis.Remedy, command) {
				t.Errorf("%s: the remedy text lacks the fix's command %q", tc.diagnosis.Cause, command)
			}
			if writer, target, ok := strings.Cut(command, " | "); ok {
				if !strings.Contains(target, "tee "+remedy.SysctlFile) {
					t.Errorf("%s: %q writes elsewhere", tc.diagnosis.Cause, command)
				}
				out, err := exec.Command("/bin/sh", "-c", writer).Output()
				if err != nil {
					t.Fatal(err)
				}
				printed = string(out)
			}
		}
		if printed != fix.Content {
			t.Errorf("%s: the printed command writes\n%s\nbut the fix's content is\n%s", tc.diagnosis.Cause, printed, fix.Content)
		}
		if _, err := remedy.SysctlDropIn(remedy.SysctlFile, printed, []remedy.SysctlSetting{tc.setting}); err != nil {
			t.Errorf("%s: --fix refuses the file the printed remedy writes: %v", tc.diagnosis.Cause, err)
		}
	}
}

// TestWSL2WithoutItsVariables: WSL2 entered through `sudo -i` (markers present, WSL_* gone)
// is WSL2 to the diagnosis too: never told to convert to WSL2, never the WSL1 cause.
func TestWSL2WithoutItsVariables(t *testing.T) {
	host := hostFixture(t, "wsl2-sudo-custom-kernel")
	if host.Kind != platform.KindWSL2 {
		t.Fatalf("kind %s, want wsl2", host.Kind)
	}
	for _, stderr := range []string{"static-0.12.0-proc-masked", "codex-userns-eperm", "debian-0.8.0-nested-enospc"} {
		diagnosis := Diagnose(Facts{Host: host, Bwrap: "/usr/bin/bwrap", Reason: sandbox.ReasonSetupFailed, Stderr: stderrFixture(t, stderr)})
		if diagnosis.Cause == CauseWSL1 || strings.Contains(diagnosis.Remedy, "wsl --set-version") {
			t.Errorf("%s: WSL2 diagnosed as WSL1: %s", stderr, diagnosis.Remedy)
		}
	}
}

// FuzzParseFailure: any stderr parses without panic into a known step, and a Path or Errno
// only where the line holds it.
func FuzzParseFailure(f *testing.F) {
	for _, seed := range []string{"bwrap: Can't mount proc on /proc: Operation not permitted\n", "bwrap: ", "setting up uid map: Permission denied",
		"bwrap: Can't bind mount /a on /b: No such file or directory", "bwrap: x: Limit exceeded (ENOSPC). (Hint", "\x00bwrap: \n\n"} {
		f.Add(seed)
	}
	known := map[Step]bool{StepNone: true, StepOther: true, StepUserns: true, StepInnerUserns: true, StepUIDMap: true, StepLoopback: true,
		StepSlave: true, StepProc: true, StepDisableUserns: true, StepBind: true, StepTmpfs: true, StepSetuid: true}
	f.Fuzz(func(t *testing.T, stderr string) {
		got := ParseFailure(stderr)
		if !known[got.Step] {
			t.Fatalf("unknown step %q", got.Step)
		}
		if got.Path != "" && !strings.Contains(stderr, got.Path) && got.Path != "/" {
			t.Fatalf("path %q not in the text", got.Path)
		}
		if got.Errno != "" && !strings.Contains(strings.ToLower(stderr), strings.ToLower(got.Errno)) && !got.MountLimit && !got.ENOSPC {
			t.Fatalf("errno %q not in the text", got.Errno)
		}
		Diagnose(Facts{Host: linuxHost(), Reason: sandbox.ReasonSetupFailed, Stderr: stderr})
	})
}

func BenchmarkDiagnose(b *testing.B) {
	host := hostFixture(b, "docker-ubuntu2404")
	stderr := "bwrap: Failed to make / slave: Permission denied\n"
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		Diagnose(Facts{Host: host, Bwrap: "/usr/bin/bwrap", Reason: sandbox.ReasonSetupFailed, Stderr: stderr})
	}
}
