package sandbox

import (
	"strconv"
	"strings"
)

// DefaultPath is the command's PATH inside the sandbox.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// ArgvSeccompFD is where the argv of Argv has bwrap read its seccomp filter: a caller that
// execs that argv itself opens the program (SeccompProgram) on this descriptor. Without
// it bwrap refuses to start, so a forgotten filter fails closed.
const ArgvSeccompFD = 3

// Argv is the complete bwrap command line for running cmd under policy, bwrapPath
// first, with bind sources named by path and the filter on ArgvSeccompFD. It is pure:
// everything it depends on is in its arguments. Run builds the same line with every
// bind source held open (--bind-fd) and verifies the result before the command starts.
func Argv(bwrapPath string, policy Policy, cmd []string) ([]string, error) {
	if err := check(bwrapPath, policy, cmd); err != nil {
		return nil, err
	}
	return build(bwrapPath, resolve(policy), cmd, layout{seccompFD: ArgvSeccompFD}), nil
}

// layout is where the descriptors a launch passes to bwrap sit.
type layout struct {
	seccompFD int
	// sourceFD maps a bind source to a descriptor open on it; bound with --bind-fd or
	// --ro-bind-fd, so bwrap binds what was checked, not whatever the path names later.
	sourceFD map[string]int
}

// build is the argv of a resolved run (see plan.go); its policy passed check first.
func build(bwrapPath string, run resolved, cmd []string, fds layout) []string {
	argv := make([]string, 0, 128+2*len(run.env)+len(cmd))
	argv = append(argv, bwrapPath,
		// As root, --unshare-all silently skips the user namespace; ask for it by name.
		"--unshare-all", "--unshare-user")
	if run.network {
		argv = append(argv, "--share-net")
	}
	if run.features.Has("disable-userns") {
		// A user namespace inside is the usual first step of a kernel exploit.
		argv = append(argv, "--disable-userns")
	}
	argv = append(argv, "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv")

	argv = append(argv, "--ro-bind", "/usr", "/usr")
	for _, root := range run.host.Roots {
		if root.Target != "" {
			argv = append(argv, "--symlink", root.Target, root.Path)
		} else {
			argv = append(argv, "--ro-bind", root.Path, root.Path)
		}
	}
	for _, path := range run.host.Etc {
		if isNetworkEtc(path) && !run.network {
			continue
		}
		argv = append(argv, "--ro-bind", path, path)
	}
	argv = append(argv, "--proc", "/proc")
	argv = appendKernelSurface(argv, run.host.Proc)
	argv = append(argv, "--dev", "/dev")
	// Every private tmpfs is bounded (the kernel's default is half of RAM each), and
	// /dev gets its own /dev/shm: bwrap's /dev is one unbounded tmpfs, so /dev itself is
	// made read-only after it (its device nodes are binds of their own and stay usable).
	size := run.limits.TmpfsSize()
	for _, dir := range PrivateTmpfs() {
		if size > 0 && run.features.Has("size") {
			argv = append(argv, "--size", strconv.FormatUint(size, 10))
		}
		argv = append(argv, "--tmpfs", dir)
	}
	argv = append(argv, "--remount-ro", "/dev")
	if run.ephemeralHome {
		argv = append(argv, "--dir", EphemeralHome)
	}

	for _, bind := range run.binds {
		if bind.option == overlayOption {
			// The project is the overlay's only lower layer; writes go to bwrapkit's
			// upper layer, never to the project, until they are vetted and landed.
			argv = append(argv, "--overlay-src", bind.path, "--overlay", run.overlay.upper, run.overlay.work, bind.path)
			continue
		}
		if fd, ok := fds.sourceFD[bind.path]; ok && run.features.Has("bind-fd") && run.features.Has("ro-bind-fd") {
			argv = append(argv, bind.option+"-fd", strconv.Itoa(fd), bind.path)
			continue
		}
		argv = append(argv, bind.option, bind.path, bind.path)
	}
	// After the binds: a link's directory may have been made by one of them.
	for _, link := range run.links {
		argv = append(argv, "--symlink", link.Target, link.Path)
	}
	argv = append(argv, run.cacheArgs...)
	argv = append(argv, run.netProxy.binds()...)
	// Last of the mounts: anything not bound read-write above now fails with EROFS
	// instead of landing silently in bwrap's throwaway root tmpfs. Run also takes a
	// read-only root as the sign that bwrap's setup is complete (see gate.go).
	argv = append(argv, "--remount-ro", "/")

	for _, entry := range run.env {
		name, value, _ := strings.Cut(entry, "=")
		argv = append(argv, "--setenv", name, value)
	}
	// bwrap reads the filter after setup, just before the command: Run's gate.
	argv = append(argv, "--seccomp", strconv.Itoa(fds.seccompFD))
	argv = append(argv, "--chdir", run.startDir, "--")
	return append(argv, run.netProxy.wrap(cmd)...)
}

// appendKernelSurface closes the parts of the fresh /proc that act on the whole host:
// runc's read-only paths (bound from the host's /proc read-only, since bwrap's sources
// are outside paths) and masked paths (a file covered by /dev/null, a directory by an
// empty read-only tmpfs). A root caller is host uid 0 inside, and file permissions alone
// would let it write /proc/sys, /proc/sysrq-trigger or /proc/irq.
func appendKernelSurface(argv []string, proc ProcSurface) []string {
	for _, path := range proc.ReadOnly {
		argv = append(argv, "--ro-bind", path, path)
	}
	for _, path := range proc.MaskFiles {
		argv = append(argv, "--ro-bind", "/dev/null", path)
	}
	for _, path := range proc.MaskDirs {
		argv = append(argv, "--tmpfs", path, "--remount-ro", path)
	}
	return argv
}

// PrivateTmpfs are the directories that get a private tmpfs of their own (a fresh copy):
// writes there succeed inside and never reach the host.
func PrivateTmpfs() []string { return []string{"/dev/shm", "/tmp", "/var/tmp", "/run"} }
