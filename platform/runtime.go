package platform

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Runtimes, as Host.Runtime reports them. The names are systemd-detect-virt's where it has
// one (virt.c's container_table), so a user can compare the two.
const (
	RuntimeDocker        = "docker"
	RuntimePodman        = "podman"
	RuntimeKubernetes    = "kubernetes"
	RuntimeContainerd    = "containerd" // nerdctl, ctr or another containerd client, without Kubernetes
	RuntimeLXC           = "lxc"        // plain LXC (lxc-start)
	RuntimeLXCLibvirt    = "lxc-libvirt"
	RuntimeLXD           = "lxd"
	RuntimeIncus         = "incus"
	RuntimeProxmox       = "proxmox" // Proxmox VE's LXC containers (pct)
	RuntimeCrostini      = "crostini"
	RuntimeNspawn        = "systemd-nspawn"
	RuntimeOpenVZ        = "openvz"
	RuntimeRkt           = "rkt"
	RuntimePouch         = "pouch"
	RuntimeWSL           = "wsl" // only as PID 1's container= value: Kind says WSL otherwise
	RuntimeOther         = "container-other"
	ContainerContainerd  = "containerd"
	ContainerNspawn      = "systemd-nspawn"
	ContainerOpenVZ      = "openvz"
	ContainerOther       = "container-other"
	ContainerRkt         = "rkt"
	ContainerPouch       = "pouch"
	EmulationGVisor      = "gvisor" // gVisor's Sentry answers the system calls, not Linux
	EmulationProot       = "proot"  // a proot tracer rewrites this process's system calls
	VirtualMachineLXD    = "lxd"
	VirtualMachineIncus  = "incus"
	gvisorVersionStamp   = "#1 SMP Sun Jan 10 15:06:54 PST 2016"
	pathVersion          = "proc/version"
	pathContainerManager = "run/host/container-manager"
	pathSystemdContainer = "run/systemd/container"
	pathInitEnviron      = "proc/1/environ"
)

// containerFamily maps a runtime to Host.Container, the coarser name the doctor has always
// reported: LXD, Incus, Proxmox and Crostini are all LXC containers.
func containerFamily(runtime string) string {
	switch runtime {
	case RuntimeLXC, RuntimeLXCLibvirt, RuntimeLXD, RuntimeIncus, RuntimeProxmox, RuntimeCrostini:
		return ContainerLXC
	case RuntimeWSL:
		// WSL's init is not a container manager; Kind already says WSL.
		return ""
	}
	return runtime
}

// proof is one runtime with the file that showed it.
type proof struct {
	runtime, evidence string
}

// runtimeFacts is what detectRuntime found.
type runtimeFacts struct {
	runtime  string
	evidence []string
	instance string // Proxmox's container ID, when the root file system names it
	vm       string
}

// detectRuntime names the container runtime from files alone, in virt.c's order (a manager's
// own declaration first, then marker files, then traces in the mount and cgroup tables),
// except that Kubernetes comes first: its pods carry the traces of the runtime under it too.
// The environment only confirms: a variable can leak through sudo, ssh or a login shell.
func detectRuntime(r *reader, mounts []mount, initialUserns bool, getenv func(string) string) runtimeFacts {
	var facts runtimeFacts
	found := func(p proof) runtimeFacts {
		facts.runtime = p.runtime
		facts.evidence = append(facts.evidence, p.evidence)
		switch p.runtime {
		case RuntimeLXC:
			facts.runtime, facts.instance = refineLXC(r, mounts, &facts.evidence)
		case RuntimeDocker, RuntimeContainerd, RuntimeOther:
			// The kubelet sets this variable in every container of a pod; with a file
			// already proving a container it only says which manager started it.
			if getenv("KUBERNETES_SERVICE_HOST") != "" {
				facts.runtime = RuntimeKubernetes
				facts.evidence = append(facts.evidence, "KUBERNETES_SERVICE_HOST is set")
			}
		}
		return facts
	}
	rootMount := rootOf(mounts)

	if p, ok := kubernetesProof(r, mounts); ok {
		return found(p)
	}
	if r.exists("proc/vz") && !r.exists("proc/bc") {
		// /proc/vz is there inside and outside an OpenVZ container, /proc/bc only outside.
		return found(proof{RuntimeOpenVZ, "/proc/vz exists and /proc/bc does not"})
	}
	for _, path := range []string{pathContainerManager, pathSystemdContainer} {
		if data, err := r.fact(path, maxFileSize); err == nil {
			if name := firstLine(data); managerName(name) {
				return found(proof{runtimeNamed(name, r), "/" + path + ": " + name})
			} else if name != "" {
				r.problem(path, fmt.Errorf("not a container manager's name: %q", name))
			}
		}
	}
	if data, err := r.fact(pathInitEnviron, maxFileSize); err == nil {
		for _, variable := range bytes.Split(data, []byte{0}) {
			if name, ok := strings.CutPrefix(string(variable), "container="); ok && managerName(name) {
				return found(proof{runtimeNamed(name, r), "/proc/1/environ: container=" + name})
			}
		}
	}
	if p, ok := lxcMarkerProof(r); ok {
		return found(p)
	}
	if p, ok := markerProof(r); ok {
		if p.runtime != RuntimeDocker || dockerCorroborated(r, rootMount, mounts) {
			return found(p)
		}
		// A VM or host built from a container image keeps the file; alone it never
		// outweighs PID 1's cgroups, the mount table and the user namespace.
		facts.evidence = append(facts.evidence, "/.dockerenv exists, but the root file system, PID 1's cgroups, "+
			"the /proc mounts and the user namespace all show no container (a file left from an image?)")
	}
	if p, ok := rootFilesystemProof(rootMount, mounts); ok {
		return found(p)
	}
	if p, ok := cgroupProof(r); ok {
		return found(p)
	}
	for _, m := range mounts {
		if m.fsType == "fuse.lxcfs" && strings.HasPrefix(m.point, "/proc/") {
			// LXD, Incus and Proxmox lay lxcfs over /proc/cpuinfo and friends; a host does not.
			return found(proof{RuntimeLXC, "lxcfs is mounted over " + m.point})
		}
	}
	if p, ok := devLXDProof(r, initialUserns); ok {
		return found(p)
	}
	if vm, evidence, ok := lxdVirtualMachine(r); ok {
		facts.vm = vm
		facts.evidence = append(facts.evidence, evidence)
		return facts
	}
	if p, ok := cgroupNamespaceProof(r); ok {
		return found(p)
	}
	if getenv("container") != "" || getenv("KUBERNETES_SERVICE_HOST") != "" {
		facts.evidence = append(facts.evidence, "the environment names a container, but no file proves one")
	}
	return facts
}

// kubernetesProof looks for what the kubelet mounts into every pod: the service-account
// token (unless automountServiceAccountToken is false), /dev/termination-log and the pod's
// /etc/hosts, all from /var/lib/kubelet/pods; on cgroup v1 the kubepods cgroup shows as well.
func kubernetesProof(r *reader, mounts []mount) (proof, bool) {
	for _, m := range mounts {
		switch {
		case strings.HasPrefix(m.point, "/var/run/secrets/kubernetes.io/") || strings.HasPrefix(m.point, "/run/secrets/kubernetes.io/"):
			return proof{RuntimeKubernetes, "the service-account token is mounted at " + m.point}, true
		case m.point == "/dev/termination-log" || strings.Contains(m.root, "/kubelet/pods/"):
			return proof{RuntimeKubernetes, m.point + " is mounted from the kubelet's " + m.root}, true
		}
	}
	for _, path := range []string{"var/run/secrets/kubernetes.io/serviceaccount/token", "run/secrets/kubernetes.io/serviceaccount/token"} {
		if r.exists(path) {
			return proof{RuntimeKubernetes, "/" + path + " exists"}, true
		}
	}
	for _, path := range []string{"proc/1/cgroup", "proc/self/cgroup"} {
		if data, ok := r.file(path); ok && bytes.Contains(data, []byte("kubepods")) {
			return proof{RuntimeKubernetes, "/" + path + " names kubepods"}, true
		}
	}
	return proof{}, false
}

// lxcMarkerProof: LXC (4.0 and later) writes /dev/.lxc-boot-id into every container's /dev,
// and its nesting configuration mounts /dev/.lxc/proc; both are readable by any user, where
// PID 1's environment (container=lxc) is root's only and a cgroup namespace shows "/".
func lxcMarkerProof(r *reader) (proof, bool) {
	for _, path := range []string{"dev/.lxc-boot-id", "dev/.lxc/proc"} {
		if r.exists(path) {
			return proof{RuntimeLXC, "/" + path + " exists (LXC makes it in the container's /dev)"}, true
		}
	}
	return proof{}, false
}

// markerProof checks the files runtimes leave in the root: podman's /run/.containerenv
// before Docker's /.dockerenv, which can end up baked into an image.
func markerProof(r *reader) (proof, bool) {
	switch {
	case r.exists("run/.containerenv"):
		return proof{RuntimePodman, "/run/.containerenv exists"}, true
	case r.exists(".dockerenv"):
		return proof{RuntimeDocker, "/.dockerenv exists"}, true
	}
	return proof{}, false
}

// dockerCorroborated: nothing speaks against /.dockerenv. Against it, together: the mount
// table was read and its root is no overlay (or other layered store) and nothing is mounted
// over parts of /proc (runc masks /proc/kcore and friends unless systempaths=unconfined), and
// PID 1 sits in the root of v1 hierarchies (on cgroup v2 a container's namespace shows "0::/"
// too, so that says nothing). A VM or host built from a container image shows all of these,
// and so does a sandbox such as bwrap's run on one (a user namespace of its own proves no
// container: Docker's userns-remap still has its overlay and masks).
func dockerCorroborated(r *reader, root mount, mounts []mount) bool {
	if len(mounts) == 0 || root.point != "/" {
		return true
	}
	if strings.Contains(root.fsType, "overlay") || root.fsType == "aufs" || strings.Contains(root.root, "/docker/") {
		return true
	}
	for _, m := range mounts {
		if strings.HasPrefix(m.point, "/proc/") {
			return true
		}
	}
	data, ok := r.file("proc/1/cgroup")
	if !ok {
		return true
	}
	v1 := false
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || parts[2] != "/" {
			return true
		}
		v1 = v1 || parts[0] != "0"
	}
	return !v1
}

// rootFilesystemProof reads the storage paths an overlay root names in its options (they are
// the host's, and runtimes keep them apart), and the bind mounts of /etc/hosts and friends.
func rootFilesystemProof(root mount, mounts []mount) (proof, bool) {
	candidates := []struct{ marker, runtime string }{
		{"/var/lib/docker/", RuntimeDocker},
		{"/containers/storage/", RuntimePodman},
		{"io.containerd.snapshotter", RuntimeContainerd},
		{"/var/lib/nerdctl/", RuntimeContainerd},
	}
	for _, c := range candidates {
		if root.point == "/" && strings.Contains(root.superOptions, c.marker) {
			return proof{c.runtime, "the root file system is " + root.fsType + " from " + strings.TrimSuffix(c.marker, "/")}, true
		}
	}
	for _, m := range mounts {
		if m.point != "/etc/hosts" && m.point != "/etc/resolv.conf" && m.point != "/etc/hostname" {
			continue
		}
		for _, c := range candidates {
			if strings.Contains(m.root, c.marker) {
				return proof{c.runtime, m.point + " is mounted from " + m.root}, true
			}
		}
	}
	return proof{}, false
}

// cgroupProof reads PID 1's cgroup: on cgroup v1 (or without a cgroup namespace) it names
// the container's cgroup; on v2 with a namespace it reads "0::/" and says nothing.
func cgroupProof(r *reader) (proof, bool) {
	data, ok := r.file("proc/1/cgroup")
	if !ok {
		return proof{}, false
	}
	text := string(data)
	switch {
	case strings.Contains(text, "/docker/") || strings.Contains(text, "/docker-"):
		return proof{RuntimeDocker, "/proc/1/cgroup names docker"}, true
	case strings.Contains(text, "/libpod-") || strings.Contains(text, "/machine.slice/libpod"):
		return proof{RuntimePodman, "/proc/1/cgroup names libpod"}, true
	case strings.Contains(text, "/lxc/") || strings.Contains(text, "/lxc.payload"):
		return proof{RuntimeLXC, "/proc/1/cgroup names lxc"}, true
	case strings.Contains(text, "/machine.slice/systemd-nspawn@"):
		return proof{RuntimeNspawn, "/proc/1/cgroup names systemd-nspawn@"}, true
	}
	return proof{}, false
}

// devLXDProof: LXD and Incus give containers and VMs alike their guest API at /dev/lxd or
// /dev/incus, so the socket says "container" only where a VM cannot be: in a user namespace
// other than the initial one (every unprivileged container; a VM's kernel runs in its own
// initial one).
func devLXDProof(r *reader, initialUserns bool) (proof, bool) {
	if initialUserns {
		return proof{}, false
	}
	for _, dir := range []string{"dev/incus", "dev/lxd"} {
		if r.exists(dir) {
			return proof{RuntimeLXC, "/" + dir + " exists and this is not the initial user namespace"}, true
		}
	}
	return proof{}, false
}

// lxdVirtualMachine recognises an LXD or Incus VM: their firmware names them in the DMI
// board name (LXD announces itself in SMBIOS since 4.1), and their agent's virtio port is
// named after them.
func lxdVirtualMachine(r *reader) (vm, evidence string, ok bool) {
	if data, err := r.fact("sys/class/dmi/id/board_name", maxFileSize); err == nil {
		switch name := firstLine(data); name {
		case "LXD":
			return VirtualMachineLXD, "/sys/class/dmi/id/board_name: LXD", true
		case "Incus":
			return VirtualMachineIncus, "/sys/class/dmi/id/board_name: Incus", true
		}
	}
	for vm, port := range map[string]string{VirtualMachineLXD: "dev/virtio-ports/org.linuxcontainers.lxd",
		VirtualMachineIncus: "dev/virtio-ports/org.linuxcontainers.incus"} {
		if r.exists(port) {
			return vm, "/" + port + " exists", true
		}
	}
	return "", "", false
}

// cgroupNamespaceProof is virt.c's running_in_cgroupns for cgroup v2: the root of the
// hierarchy has no cgroup.events, so seeing it at /sys/fs/cgroup means this is a nested
// cgroup shown as the root, as a container's cgroup namespace does. Newer kernels also lack
// cgroup.type in the root, which tells an old kernel's root apart.
func cgroupNamespaceProof(r *reader) (proof, bool) {
	if !r.exists("sys/fs/cgroup/cgroup.events") {
		return proof{}, false
	}
	if r.exists("sys/fs/cgroup/cgroup.type") || !r.exists("sys/kernel/cgroup/features") {
		return proof{RuntimeOther, "/sys/fs/cgroup is a nested cgroup (it has cgroup.events): a cgroup namespace"}, true
	}
	return proof{}, false
}

// runtimeNamed translates a manager's own name, as in virt.c: "oci" names no manager, so
// the marker files decide then.
func runtimeNamed(name string, r *reader) string {
	switch name {
	case RuntimeLXC, RuntimeLXCLibvirt, RuntimeNspawn, RuntimeDocker, RuntimePodman, RuntimeRkt, RuntimeWSL, RuntimePouch:
		return name
	case "systemd-nspawn@", "nspawn":
		return RuntimeNspawn
	case "oci":
		if p, ok := markerProof(r); ok {
			return p.runtime
		}
	}
	return RuntimeOther
}

// proxmoxVolume matches Proxmox VE's volume names (vm-101-disk-0 on LVM and directories,
// subvol-101-disk-0 on ZFS), which the container's root mount shows as its source.
// Compiled on first use: package platform is in every bwrapkit process (run and its
// keeper too), and compiling it at initialisation cost each of them about 0.05 ms.
var proxmoxVolume = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[/-])(?:vm|subvol)-{1,2}([0-9]+)-{1,2}disk-{1,2}[0-9]+`)
})

// refineLXC tells the LXC-based managers apart by what each adds to the container.
func refineLXC(r *reader, mounts []mount, evidence *[]string) (runtime, instance string) {
	switch {
	case r.exists("dev/.cros_milestone"):
		*evidence = append(*evidence, "/dev/.cros_milestone exists (ChromeOS's Crostini)")
		return RuntimeCrostini, ""
	case r.exists("dev/incus"):
		appendOnce(evidence, "/dev/incus exists")
		return RuntimeIncus, ""
	case r.exists("dev/lxd"):
		appendOnce(evidence, "/dev/lxd exists")
		return RuntimeLXD, ""
	}
	if root := rootOf(mounts); root.point == "/" {
		if match := proxmoxVolume().FindStringSubmatch(root.source); match != nil {
			*evidence = append(*evidence, "the root file system is Proxmox volume "+root.source)
			return RuntimeProxmox, match[1]
		}
	}
	return RuntimeLXC, ""
}

// appendOnce adds a line unless one already names the same file.
func appendOnce(evidence *[]string, line string) {
	file, _, _ := strings.Cut(line, " ")
	for _, have := range *evidence {
		if strings.HasPrefix(have, file+" ") {
			return
		}
	}
	*evidence = append(*evidence, line)
}

// rootOf returns the mount at "/" that is seen (the last one mounted there).
func rootOf(mounts []mount) mount {
	var root mount
	for _, m := range mounts {
		if m.point == "/" {
			root = m
		}
	}
	return root
}

// detectEmulation names what stands between this process and a Linux kernel. gVisor prints
// a fixed build stamp in /proc/version whatever release it claims (4.4.0, 4.19.0-gvisor);
// proot shows as this process's tracer.
func detectEmulation(r *reader, kernel string, tracer Tracer) (emulation, evidence string) {
	if data, err := r.fact(pathVersion, maxFileSize); err == nil && bytes.Contains(data, []byte(gvisorVersionStamp)) {
		return EmulationGVisor, "/proc/version: " + firstLine(data)
	}
	if strings.HasSuffix(kernel, "-gvisor") {
		return EmulationGVisor, "/proc/sys/kernel/osrelease: " + kernel
	}
	if strings.HasPrefix(tracer.Comm, "proot") {
		return EmulationProot, "traced by " + tracer.Comm
	}
	return "", ""
}

// managerName accepts what a manager writes there ("systemd-nspawn", "lxc", "oci"), not
// binary garbage, which would otherwise read as some unknown container.
func managerName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._@-", c)) {
			return false
		}
	}
	return true
}

// firstLine is a file's first line, trimmed.
func firstLine(data []byte) string {
	line, _, _ := strings.Cut(string(data), "\n")
	return strings.TrimSpace(line)
}
