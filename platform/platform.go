// Package platform says what host this is: Linux, WSL2, WSL1 or another OS, the container
// runtime or emulator it runs under, the kernel release, the user-namespace knobs, the LSMs
// and this process's confinement, as read from /proc, /sys, /run and /etc. Everything is pure
// over an injected root file system and environment, so fixtures stand in for hosts.
package platform

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// Host kinds, as Host.Kind and the doctor's JSON report them.
const (
	KindLinux   = "linux"
	KindWSL2    = "wsl2"
	KindWSL1    = "wsl1"
	KindDarwin  = "darwin"
	KindWindows = "windows"
	KindOther   = "other"
)

// Container runtimes, as Host.Container reports them; "" means no hint of one.
const (
	ContainerDocker     = "docker"
	ContainerPodman     = "podman"
	ContainerLXC        = "lxc"
	ContainerKubernetes = "kubernetes"
)

// Host is what Detect found. Absent files leave their fields at the zero value; files that
// exist but cannot be read or parsed are listed in Problems as well.
type Host struct {
	OS, Arch  string // runtime.GOOS and runtime.GOARCH, as given by the caller
	Kind      string // one of the Kind constants
	Kernel    string // /proc/sys/kernel/osrelease, trimmed
	Container string // one of the Container constants, or ""

	UnprivilegedUsernsClone Knob // /proc/sys/kernel/unprivileged_userns_clone (Debian, Ubuntu, Arch)
	MaxUserNamespaces       Knob // /proc/sys/user/max_user_namespaces
	UsernsModuleEnable      Knob // /sys/module/user_namespace/parameters/enable (RHEL 7), Y/N as 1/0
	AppArmorRestrictUserns  Knob // /proc/sys/kernel/apparmor_restrict_unprivileged_userns (Ubuntu 23.10+)

	AppArmorEnabled bool   // /sys/module/apparmor/parameters/enabled is Y (else /sys/kernel/security/apparmor exists)
	SELinux         string // "enforcing", "permissive", "disabled", or "" when unknown

	NoNewPrivs bool // NoNewPrivs: of /proc/self/status
	Seccomp    int  // Seccomp: of /proc/self/status: 0 none, 1 strict, 2 filter

	// CapSysAdmin and InitialUserNamespace together make this process privileged in the
	// kernel's sense (capable(CAP_SYS_ADMIN)), which some userns knobs exempt. Root in a
	// rootless container has the capability, but only in its own user namespace.
	CapSysAdmin          bool // bit 21 of CapEff: in /proc/self/status
	InitialUserNamespace bool // /proc/self/uid_map is the identity map, or absent (no user namespaces)

	// What runs this process, proved by files (runtime.go); the environment alone never decides.
	Runtime         string   // one of the Runtime constants, finer than Container; "" when no file proves one
	RuntimeInstance string   // the runtime's name for this container when a file shows it (Proxmox's CT ID)
	RuntimeEvidence []string // what each deciding file said, e.g. "/run/host/container-manager: systemd-nspawn"
	Emulation       string   // EmulationGVisor or EmulationProot; "" when Linux itself answers system calls
	VirtualMachine  string   // VirtualMachineLXD or VirtualMachineIncus when the firmware names them
	Android         bool     // an Android kernel release, /system/build.prop or /apex
	Termux          bool     // /data/data/com.termux, seen from Termux itself or a proot inside it
	Tracer          Tracer   // TracerPid of /proc/self/status and the tracer's name

	// The facts a diagnosis orders causes by; each says when it is unknown and why.
	AppArmorLabel Confinement  // this process's AppArmor label
	SeccompState  SeccompState // Seccomp and Seccomp_filters, with unknown apart from 0
	Proc          ProcView     // proc mounts, what covers them, and whether one is fully visible
	UsernsBuild   UsernsBuild  // CONFIG_USER_NS built in or not, apart from the knobs that disable it
	Cgroup        Cgroup       // this process's cgroup and whether it was delegated to the caller

	Problems []string // "path: reason" for each file that existed but could not be read or parsed
}

// Knob is one integer kernel setting. Present is false when the file is absent (the kernel
// lacks the setting) and also when it could not be read or parsed; Err tells the two apart.
type Knob struct {
	Present bool
	Value   int64
	Raw     string // the file's content, trimmed, even when it did not parse
	Err     string // why the file could not be read or parsed; "" when absent or fine
}

// Paths read by Detect, relative to the root the caller injects.
const (
	pathOSRelease      = "proc/sys/kernel/osrelease"
	pathUsernsClone    = "proc/sys/kernel/unprivileged_userns_clone"
	pathMaxUserns      = "proc/sys/user/max_user_namespaces"
	pathUsernsModule   = "sys/module/user_namespace/parameters/enable"
	pathAppArmorUserns = "proc/sys/kernel/apparmor_restrict_unprivileged_userns"
	pathAppArmorParam  = "sys/module/apparmor/parameters/enabled"
	pathAppArmorFS     = "sys/kernel/security/apparmor"
	pathSELinuxEnforce = "sys/fs/selinux/enforce"
	pathSELinuxConfig  = "etc/selinux/config"
	pathStatus         = "proc/self/status"
	pathUIDMap         = "proc/self/uid_map"
)

// capSysAdmin is CAP_SYS_ADMIN's bit number in the capability sets of /proc/PID/status.
const capSysAdmin = 21

// Detect reads the host described by root, a file system rooted at "/" (os.DirFS("/") on a
// real host, paths like "proc/sys/kernel/osrelease"), and getenv, the process environment.
// goos and goarch are runtime.GOOS and runtime.GOARCH. It never fails: what it cannot read
// it records in Problems and leaves at the zero value.
func Detect(root fs.FS, getenv func(string) string, goos, goarch string) Host {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	host := Host{OS: goos, Arch: goarch, Kind: kindOf(goos)}
	if host.Kind != KindLinux {
		// No Linux kernel underneath, so nothing under /proc or /sys describes one.
		return host
	}
	r := &reader{fsys: root}
	if data, ok := r.file(pathOSRelease); ok {
		host.Kernel = strings.TrimSpace(string(data))
	}
	mounts, procMounts := readMounts(r, host.Kernel)
	host.Proc = procMounts
	host.Kind = linuxKind(host.Kernel, getenv, r, mounts)
	host.InitialUserNamespace = initialUserNamespace(r)
	status := readStatus(r, &host)
	host.SeccompState = seccompState(status)
	if len(status) == 0 {
		host.SeccompState.Err = "/proc/self/status could not be read"
	}
	host.Tracer = readTracer(r, status)
	host.Cgroup = readCgroup(r, status)

	runtime := detectRuntime(r, mounts, host.InitialUserNamespace, getenv)
	host.Runtime, host.RuntimeInstance, host.VirtualMachine = runtime.runtime, runtime.instance, runtime.vm
	host.RuntimeEvidence = runtime.evidence
	host.Container = containerFamily(runtime.runtime)
	if emulation, evidence := detectEmulation(r, host.Kernel, host.Tracer); emulation != "" {
		host.Emulation = emulation
		host.RuntimeEvidence = append(host.RuntimeEvidence, evidence)
	}
	host.Android, host.Termux = isAndroid(r, host.Kernel), r.exists("data/data/com.termux")

	host.UnprivilegedUsernsClone = r.knob(pathUsernsClone, parseInteger)
	host.MaxUserNamespaces = r.knob(pathMaxUserns, parseInteger)
	host.UsernsModuleEnable = r.knob(pathUsernsModule, parseYesNo)
	host.AppArmorRestrictUserns = r.knob(pathAppArmorUserns, parseInteger)

	host.AppArmorEnabled = appArmorEnabled(r)
	host.SELinux = selinuxMode(r)
	host.AppArmorLabel = readConfinement(r, host.AppArmorEnabled, host.SELinux)
	if host.Emulation != EmulationGVisor {
		// gVisor's /proc describes the Sentry, not how a Linux kernel was built.
		host.UsernsBuild = readUsernsBuild(r, host.Kernel)
	} else {
		host.UsernsBuild = UsernsBuild{Evidence: "gVisor implements user namespaces itself; its /proc says nothing of a kernel build"}
	}
	host.Problems = r.problems
	return host
}

// appArmorEnabled trusts the module parameter first: containers often do not mount
// securityfs, so the absence of /sys/kernel/security/apparmor proves nothing there.
func appArmorEnabled(r *reader) bool {
	data, ok := r.file(pathAppArmorParam)
	if !ok {
		return r.exists(pathAppArmorFS)
	}
	switch value := strings.TrimSpace(string(data)); value {
	case "Y":
		return true
	case "N":
		return false
	default:
		r.problem(pathAppArmorParam, fmt.Errorf("want Y or N, got %q", value))
		return false
	}
}

// selinuxMode reads selinuxfs, which exists only while SELinux is active; without it only
// an explicit SELINUX=disabled in the config says "disabled", anything else is unknown.
func selinuxMode(r *reader) string {
	if data, ok := r.file(pathSELinuxEnforce); ok {
		switch value := strings.TrimSpace(string(data)); value {
		case "1":
			return "enforcing"
		case "0":
			return "permissive"
		default:
			r.problem(pathSELinuxEnforce, fmt.Errorf("want 0 or 1, got %q", value))
			return ""
		}
	}
	data, ok := r.file(pathSELinuxConfig)
	if !ok {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		key, value, found := strings.Cut(strings.TrimSpace(line), "=")
		if found && key == "SELINUX" && strings.TrimSpace(value) == "disabled" {
			return "disabled"
		}
	}
	return ""
}

// readStatus takes NoNewPrivs, Seccomp and CapEff from /proc/self/status. Kernels before
// 4.10 lack NoNewPrivs and WSL1 lacks several lines: a missing line is not a problem.
func readStatus(r *reader, host *Host) map[string]string {
	data, ok := r.file(pathStatus)
	if !ok {
		return nil
	}
	for _, line := range strings.Split(string(data), "\n") {
		key, value, _ := strings.Cut(line, ":")
		value = strings.TrimSpace(value)
		switch key {
		case "NoNewPrivs":
			switch value {
			case "0", "1":
				host.NoNewPrivs = value == "1"
			default:
				r.problem(pathStatus, fmt.Errorf("NoNewPrivs: want 0 or 1, got %q", value))
			}
		case "Seccomp":
			switch value {
			case "0", "1", "2":
				host.Seccomp = int(value[0] - '0')
			default:
				r.problem(pathStatus, fmt.Errorf("Seccomp: want 0, 1 or 2, got %q", value))
			}
		case "CapEff":
			caps, err := strconv.ParseUint(value, 16, 64)
			if err != nil {
				r.problem(pathStatus, fmt.Errorf("CapEff: not a hex mask: %q", value))
				continue
			}
			host.CapSysAdmin = caps&(1<<capSysAdmin) != 0
		}
	}
	return parseStatus(string(data))
}

// isAndroid: Android kernels name themselves in the release ("5.10.198-android13-4-..."),
// and the system partition is mounted at /system with its build.prop.
func isAndroid(r *reader, kernel string) bool {
	return strings.Contains(kernel, "-android") || r.exists("system/build.prop") || r.exists("apex/com.android.runtime")
}

// initialUserNamespace is true when uid_map maps every uid to itself, as only the initial
// user namespace does. Without the file the kernel has no user namespaces but the initial one.
func initialUserNamespace(r *reader) bool {
	data, err := r.read(pathUIDMap)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	return strings.Join(strings.Fields(string(data)), " ") == "0 0 4294967295"
}
