package platform

import "strings"

// Files that both WSL1 and WSL2 create: the binfmt handler that runs Windows executables
// (named WSLInterop-late when systemd starts first) and the directory of interop sockets.
var wslMarkers = []string{
	"proc/sys/fs/binfmt_misc/WSLInterop",
	"proc/sys/fs/binfmt_misc/WSLInterop-late",
	"run/WSL",
}

// kindOf maps runtime.GOOS to a kind; Linux is refined by linuxKind.
func kindOf(goos string) string {
	switch goos {
	case "linux":
		return KindLinux
	case "darwin":
		return KindDarwin
	case "windows":
		return KindWindows
	}
	return KindOther
}

// linuxKind tells WSL1, WSL2 and plain Linux apart. WSL1 is an emulation in the NT kernel
// that reports the vendor capitalised ("4.4.0-19041-Microsoft"); WSL2 runs a real kernel
// whose release says "microsoft" in lower case or "WSL2". A custom WSL2 kernel may say
// neither, so WSL's environment and files decide then, and only as WSL2: the release already
// ruled WSL1 out.
func linuxKind(osrelease string, getenv func(string) string, r *reader) string {
	switch {
	case strings.Contains(osrelease, "Microsoft"):
		return KindWSL1
	case strings.Contains(osrelease, "microsoft"), strings.Contains(osrelease, "WSL2"):
		return KindWSL2
	case (getenv("WSL_INTEROP") != "" || getenv("WSL_DISTRO_NAME") != "") && anyExists(r, wslMarkers):
		// The variables alone can leak into an ssh session or a container; the files cannot.
		return KindWSL2
	}
	return KindLinux
}

// containerOf names the container runtime this process seems to run under. Kubernetes is
// checked first because its pods also carry docker or containerd traces, and because the
// service variable survives the cgroup namespace that hides "kubepods" on cgroup v2.
func containerOf(getenv func(string) string, r *reader) string {
	initCgroup, _ := r.file("proc/1/cgroup")
	selfCgroup, _ := r.file("proc/self/cgroup")
	cgroups := string(initCgroup) + "\n" + string(selfCgroup)
	switch {
	case getenv("KUBERNETES_SERVICE_HOST") != "" || strings.Contains(cgroups, "kubepods"):
		return ContainerKubernetes
	case getenv("container") == "podman" || r.exists("run/.containerenv"):
		return ContainerPodman
	case r.exists(".dockerenv"):
		return ContainerDocker
	case getenv("container") == "lxc" || strings.Contains(cgroups, "/lxc/") || r.exists("dev/lxd"):
		return ContainerLXC
	case strings.Contains(string(initCgroup), "docker"):
		// Only cgroup v1 shows this; on v2 the container's cgroup namespace reads "0::/".
		return ContainerDocker
	}
	return ""
}

// anyExists reports whether any of names exists, checking no further than the first.
func anyExists(r *reader, names []string) bool {
	for _, name := range names {
		if r.exists(name) {
			return true
		}
	}
	return false
}
