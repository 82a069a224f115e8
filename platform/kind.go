package platform

import "strings"

// Files that both WSL1 and WSL2 create: the binfmt handler that runs Windows executables
// (named WSLInterop-late when systemd starts first) and the directory of interop sockets.
var wslMarkers = []string{
	"proc/sys/fs/binfmt_misc/WSLInterop",
	"proc/sys/fs/binfmt_misc/WSLInterop-late",
	"run/WSL",
}

// kindOf maps runtime.GOOS to a kind; Linux is refined by linuxKind. A Go build made on
// Android (Termux: GOOS=android) runs on a Linux kernel: Linux, with Android's own limits
// found like any host's.
func kindOf(goos string) string {
	switch goos {
	case "linux", "android":
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
// neither, and `sudo -i` or a login shell strips WSL's variables, so WSL's own files decide
// then: two independent ones, or one with the variables. Only as WSL2: the release already
// ruled WSL1 out.
func linuxKind(osrelease string, getenv func(string) string, r *reader, mounts []mount) string {
	switch {
	case strings.Contains(osrelease, "Microsoft"):
		return KindWSL1
	case strings.Contains(osrelease, "microsoft"), strings.Contains(osrelease, "WSL2"):
		return KindWSL2
	}
	markers := 0
	if anyExists(r, wslMarkers[:2]) {
		markers++ // the interop handler, named WSLInterop-late when systemd registered first
	}
	if r.exists(wslMarkers[2]) {
		markers++ // the directory of interop sockets WSL's init makes
	}
	for _, m := range mounts {
		if strings.HasPrefix(m.point, "/mnt/wsl") || strings.HasPrefix(m.point, "/usr/lib/wsl") ||
			strings.Contains(m.superOptions, "aname=drvfs") {
			markers++ // WSL's shared mounts and the Windows drives (9p with aname=drvfs)
			break
		}
	}
	wslVariables := getenv("WSL_INTEROP") != "" || getenv("WSL_DISTRO_NAME") != ""
	if markers >= 2 || markers == 1 && wslVariables {
		// The variables alone can leak into an ssh session or a container; the files cannot.
		return KindWSL2
	}
	return KindLinux
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
