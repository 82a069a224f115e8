package remedy

import (
	"strings"

	"github.com/bwrapkit/bwrapkit/platform"
)

// Needs says what a container must be allowed for bwrap to build a sandbox inside it.
type Needs struct {
	Seccomp  bool // the runtime's seccomp filter refuses clone(CLONE_NEWUSER) or mount(2)
	AppArmor bool // the runtime's AppArmor profile (docker-default...) denies mount(2)
	Proc     bool // the runtime masks /proc, so the kernel refuses a fresh proc mount
}

// Container is a remedy that changes how the container is run. Most such changes are made
// on its host (the container cannot lift its own confinement); Where says so in every text.
type Container struct {
	Text     string   // what to do and where, one paragraph
	Commands []string // the exact commands, in order; nil when the change is a manifest edit
	// InPlace is false where no setting of the runtime helps (gVisor, proot): Text then
	// says what to do instead.
	InPlace bool
}

// Placeholders stand for names only the host knows; a remedy never guesses them.
const (
	placeholderName  = "<container>"
	placeholderImage = "<image>"
)

// ForContainer is the remedy for host's runtime. It is empty (Text "") when host is not in a
// container, emulator or proot: the caller's own remedy applies there.
func ForContainer(host platform.Host, needs Needs) Container {
	switch {
	case host.Emulation == platform.EmulationGVisor:
		return Container{Text: "this runs under gVisor (runsc), which implements Linux itself: it has no setting that " +
			"lets bwrap build this sandbox here. Run bwrapkit in a container started by runc instead " +
			"(on the host: `docker run --runtime=runc ...`), or outside the container"}
	case host.Emulation == platform.EmulationProot:
		return Container{Text: "this runs under proot (" + orDefault(host.Tracer.Comm, "a ptrace tracer") + "), which fakes " +
			"a root file system with ptrace and cannot give bwrap namespaces: there is no fix inside proot. Run bwrapkit " +
			"on a Linux system or VM (not under proot" + termuxNote(host) + ")"}
	case host.Termux || host.Android:
		return Container{Text: "Android's kernel and Termux give apps no user namespaces bwrap can use: there is no fix " +
			"inside Termux. Run bwrapkit on a Linux system or VM (on ChromeOS, in its Linux development environment)"}
	}
	runtime := host.Runtime
	if runtime == "" {
		runtime = host.Container
	}
	switch runtime {
	case "":
		return Container{}
	case platform.RuntimeDocker:
		return runFlags("docker", needs, "systempaths=unconfined")
	case platform.RuntimePodman:
		return runFlags("podman", needs, "unmask=ALL")
	case platform.RuntimeContainerd:
		return runFlags("nerdctl", needs, "systempaths=unconfined")
	case platform.RuntimeKubernetes:
		return kubernetes(needs)
	case platform.RuntimeLXD:
		return lxdNesting("lxc", host)
	case platform.RuntimeIncus:
		return lxdNesting("incus", host)
	case platform.RuntimeCrostini:
		return Container{InPlace: true,
			Text: "Crostini's container (penguin) runs in the Termina VM under LXD: turn on nesting from crosh " +
				"(Ctrl+Alt+T in ChromeOS), not inside Linux, then restart it:",
			Commands: []string{"vsh termina", "lxc config set penguin security.nesting true", "lxc restart penguin"}}
	case platform.RuntimeProxmox:
		id := orDefault(host.RuntimeInstance, "<CTID>")
		return Container{InPlace: true,
			Text:     "on the Proxmox VE host (not inside this container), turn on nesting for container " + id + " and restart it:",
			Commands: []string{"pct set " + id + " --features nesting=1", "pct reboot " + id}}
	case platform.RuntimeLXC, platform.RuntimeLXCLibvirt:
		config := "/var/lib/lxc/" + placeholderName + "/config"
		return Container{InPlace: true,
			// Measured (make hosts, LXC 5.0): nesting.conf alone leaves /proc/sys read-only, so
			// bwrap's --disable-userns fails next; proc:rw with it is what worked.
			Text: "on the host (not inside this container), give the container LXC's nesting configuration " +
				"(AppArmor's nesting profile and a clean proc mount) and a writable proc, and restart it; " +
				placeholderName + " is its name (`lxc-ls`):",
			Commands: []string{
				"printf '%s\\n' 'lxc.include = /usr/share/lxc/config/nesting.conf' 'lxc.mount.auto = proc:rw sys:mixed cgroup:mixed' | sudo tee -a " + config,
				"sudo lxc-stop -n " + placeholderName, "sudo lxc-start -n " + placeholderName}}
	case platform.RuntimeNspawn:
		return nspawn(needs)
	}
	return Container{InPlace: true, Text: "on the host (not inside this container), run it so that it may create user namespaces and mount " +
		"a fresh proc (" + runtime + "'s settings for seccomp, AppArmor and masked paths); bwrapkit knows no exact command for " +
		runtime + ". Or let the container be the sandbox"}
}

// runFlags is the docker/podman/nerdctl remedy: the container is recreated with the flags.
func runFlags(cli string, needs Needs, unmask string) Container {
	var flags []string
	if needs.Seccomp {
		flags = append(flags, "seccomp=unconfined")
	}
	if needs.AppArmor {
		flags = append(flags, "apparmor=unconfined")
	}
	if needs.Proc {
		flags = append(flags, unmask)
	}
	if len(flags) == 0 {
		flags = []string{"seccomp=unconfined", "apparmor=unconfined"}
	}
	options := "--security-opt " + strings.Join(flags, " --security-opt ")
	return Container{InPlace: true,
		Text: "on the host (a container cannot lift its own confinement), start the container again with " + options +
			" added to the options it has (compose: security_opt: [" + strings.Join(flags, ", ") + "]), or let the container be the sandbox:",
		Commands: []string{cli + " run " + options + " " + placeholderImage}}
}

func kubernetes(needs Needs) Container {
	var fields []string
	if needs.Seccomp || !needs.Proc {
		fields = append(fields, "seccompProfile: {type: Unconfined}")
	}
	if needs.AppArmor || !needs.Proc {
		fields = append(fields, "appArmorProfile: {type: Unconfined}")
	}
	if needs.Proc {
		fields = append(fields, "procMount: Unmasked (the pod needs hostUsers: false for it)")
	}
	return Container{InPlace: true,
		Text: "in the pod's manifest (the container cannot change it), set the container's securityContext: " +
			strings.Join(fields, "; ") + "; then recreate the pod. Or let the pod be the sandbox"}
}

func lxdNesting(cli string, host platform.Host) Container {
	name := orDefault(host.RuntimeInstance, placeholderName)
	text := "on the host (not inside this container), turn on nesting, which gives the container AppArmor's nesting " +
		"profile and a fully visible proc at /dev/.lxc/proc, then restart it"
	if name == placeholderName {
		text += "; " + placeholderName + " is its name (`" + cli + " list`)"
	}
	return Container{InPlace: true, Text: text + ":",
		Commands: []string{cli + " config set " + name + " security.nesting=true", cli + " restart " + name}}
}

func nspawn(needs Needs) Container {
	if needs.Proc {
		// bubblewrap#707: a second, fully visible proc lets the kernel allow bwrap's own
		// (mnt_already_visible); it also gives the container's root a writable /proc/sys.
		return Container{InPlace: true,
			Text: "systemd-nspawn covers parts of /proc (/proc/sys, /proc/sysrq-trigger), so the kernel refuses bwrap a fresh " +
				"proc. Inside the container as root, mount one uncovered proc elsewhere; note that it gives this container's root " +
				"a writable /proc/sys (host-wide settings, unless the container runs with --private-users):",
			Commands: []string{"mkdir -p /run/bwrapkit-proc", "mount -t proc proc /run/bwrapkit-proc"}}
	}
	return Container{InPlace: true,
		Text: "systemd-nspawn's system call filter or capability set refuses this; on the host, start the container with " +
			"the system calls and capabilities bwrap needs (systemd-nspawn's --system-call-filter= and --capability=; " +
			"bwrapkit knows no exact list for nspawn), or let the container be the sandbox"}
}

// NspawnWritableProcSys is the remedy when bwrap's --disable-userns cannot write
// /proc/sys/user/max_user_namespaces because systemd-nspawn mounts /proc/sys read-only.
// privateUsers: the container has a user namespace of its own (--private-users), whose root
// cannot remount it, and which nspawn does not combine with a writable /proc/sys.
func NspawnWritableProcSys(privateUsers bool) Container {
	if privateUsers {
		// Measured (make hosts): with --private-users the container's root can remount it,
		// and nspawn ignores SYSTEMD_NSPAWN_API_VFS_WRITABLE=1.
		return Container{InPlace: true,
			Text: "systemd-nspawn mounts /proc/sys read-only (SYSTEMD_NSPAWN_API_VFS_WRITABLE=1 does not apply with " +
				"--private-users). Inside the container as root, remount it writable; with the container's own user " +
				"namespace its root changes only what that namespace owns:",
			Commands: []string{"mount -o remount,rw /proc/sys"}}
	}
	return Container{InPlace: true,
		Text: "systemd-nspawn mounts /proc/sys read-only. On the host, start the container with " +
			"SYSTEMD_NSPAWN_API_VFS_WRITABLE=1 in systemd-nspawn's environment (for a machine: `systemctl edit " +
			"systemd-nspawn@<machine>` and add Environment=SYSTEMD_NSPAWN_API_VFS_WRITABLE=1), or, inside the container " +
			"as root, remount it writable; either lets this container's root change host-wide settings unless it runs " +
			"with --private-users:",
		Commands: []string{"mount -o remount,rw /proc/sys"}}
}

func termuxNote(host platform.Host) string {
	if host.Termux || host.Android {
		return ", and not in Termux, whose Android kernel gives apps no user namespaces"
	}
	return ""
}

func orDefault(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}
