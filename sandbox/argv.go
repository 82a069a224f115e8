package sandbox

import (
	"errors"
	"path/filepath"
	"slices"
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
	return build(bwrapPath, policy, cmd, layout{seccompFD: ArgvSeccompFD})
}

// layout is where the descriptors a launch passes to bwrap sit.
type layout struct {
	seccompFD int
	// sourceFD maps a bind source to a descriptor open on it; bound with --bind-fd or
	// --ro-bind-fd, so bwrap binds what was checked, not whatever the path names later.
	sourceFD map[string]int
}

func build(bwrapPath string, policy Policy, cmd []string, fds layout) ([]string, error) {
	if err := check(bwrapPath, policy, cmd); err != nil {
		return nil, err
	}
	argv := make([]string, 0, 128+2*len(policy.Env)+len(cmd))
	argv = append(argv, bwrapPath,
		// As root, --unshare-all silently skips the user namespace; ask for it by name.
		"--unshare-all", "--unshare-user")
	if policy.Network {
		argv = append(argv, "--share-net")
	}
	if policy.Features.Has("disable-userns") {
		// A user namespace inside is the usual first step of a kernel exploit.
		argv = append(argv, "--disable-userns")
	}
	argv = append(argv, "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv")

	argv = append(argv, "--ro-bind", "/usr", "/usr")
	for _, root := range policy.Host.Roots {
		if root.Target != "" {
			argv = append(argv, "--symlink", root.Target, root.Path)
		} else {
			argv = append(argv, "--ro-bind", root.Path, root.Path)
		}
	}
	for _, path := range policy.Host.Etc {
		if isNetworkEtc(path) && !policy.Network {
			continue
		}
		argv = append(argv, "--ro-bind", path, path)
	}
	argv = append(argv, "--proc", "/proc")
	argv = appendKernelSurface(argv, policy.Host.Proc)
	argv = append(argv, "--dev", "/dev")
	// Every private tmpfs is bounded (the kernel's default is half of RAM each), and
	// /dev gets its own /dev/shm: bwrap's /dev is one unbounded tmpfs, so /dev itself is
	// made read-only after it (its device nodes are binds of their own and stay usable).
	size := policy.Limits.TmpfsSize()
	for _, dir := range PrivateTmpfs() {
		if size > 0 && policy.Features.Has("size") {
			argv = append(argv, "--size", strconv.FormatUint(size, 10))
		}
		argv = append(argv, "--tmpfs", dir)
	}
	argv = append(argv, "--remount-ro", "/dev")
	if policy.EphemeralHome && policy.Home == "" {
		argv = append(argv, "--dir", EphemeralHome)
	}

	for _, bind := range binds(policy) {
		if fd, ok := fds.sourceFD[bind.path]; ok && policy.Features.Has("bind-fd") && policy.Features.Has("ro-bind-fd") {
			argv = append(argv, bind.option+"-fd", strconv.Itoa(fd), bind.path)
			continue
		}
		argv = append(argv, bind.option, bind.path, bind.path)
	}
	// After the binds: a link's directory may have been made by one of them.
	for _, link := range policy.Links {
		if policy.visible(link.Path) {
			continue // a later bind shows the host's own link there
		}
		argv = append(argv, "--symlink", link.Target, link.Path)
	}
	// Last of the mounts: anything not bound read-write above now fails with EROFS
	// instead of landing silently in bwrap's throwaway root tmpfs. Run also takes a
	// read-only root as the sign that bwrap's setup is complete (see gate.go).
	argv = append(argv, "--remount-ro", "/")

	for _, entry := range policy.Environment() {
		name, value, _ := strings.Cut(entry, "=")
		argv = append(argv, "--setenv", name, value)
	}
	// bwrap reads the filter after setup, just before the command: Run's gate.
	argv = append(argv, "--seccomp", strconv.Itoa(fds.seccompFD))
	argv = append(argv, "--chdir", policy.StartDir(), "--")
	return append(argv, cmd...), nil
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

type bind struct {
	option string
	path   string
}

// binds orders the policy's binds parent before child, so a read-only path inside
// the workdir lands on top of it, and the workdir on top of a read-only parent. Every
// writable directory between the workdir and a protected path is bound onto itself: a
// mount point cannot be renamed or removed, so the command cannot move the protected
// path away (rename its parent) and put its own file at the protected name.
func binds(policy Policy) []bind {
	all := make([]bind, 0, 2+len(policy.ReadOnly)+2*len(policy.Protect))
	all = append(all, bind{"--bind", policy.Workdir})
	if policy.Home != "" {
		all = append(all, bind{"--bind", policy.Home})
	}
	for _, path := range policy.ReadWrite {
		all = append(all, bind{"--bind", path})
	}
	readOnly := append(slices.Clone(policy.ReadOnly), policy.Protect...)
	for _, path := range policy.ReadOnly {
		all = append(all, bind{"--ro-bind", path})
	}
	for _, path := range policy.Protect {
		all = append(all, bind{"--ro-bind", path})
	}
	// An --ro path inside the workdir is pinned like a protected one: otherwise the
	// command could rename its parent away and put its own files at the name.
	pinned := slices.Clone(policy.Protect)
	for _, path := range policy.ReadOnly {
		if within(policy.Workdir, path) && path != policy.Workdir {
			pinned = append(pinned, path)
		}
	}
	for _, ancestor := range protectAncestors(policy.Workdir, pinned, readOnly) {
		all = append(all, bind{"--bind", ancestor})
	}
	slices.SortStableFunc(all, func(a, b bind) int { return depth(a.path) - depth(b.path) })
	return all
}

// protectAncestors are the directories strictly between workdir and each protected path
// that are still writable inside (not at or under a read-only bind), each once.
func protectAncestors(workdir string, protect, readOnly []string) []string {
	var ancestors []string
	for _, path := range protect {
		for _, ancestor := range ancestorsBelow(workdir, path) {
			covered := slices.ContainsFunc(readOnly, func(ro string) bool { return within(ro, ancestor) })
			if !covered && !slices.Contains(ancestors, ancestor) {
				ancestors = append(ancestors, ancestor)
			}
		}
	}
	return ancestors
}

func depth(path string) int {
	if path == "/" {
		return 0
	}
	return strings.Count(path, "/")
}

// Environment is the command's whole environment, in the order it is set (later wins):
// the one list the doctor's env-clear verdict checks against.
func (policy Policy) Environment() []string {
	home := policy.Home
	switch {
	case home != "":
	case policy.EphemeralHome:
		home = EphemeralHome
	default:
		home = policy.Workdir
	}
	env := []string{"PATH=" + policy.InsidePath(), "HOME=" + home, "TMPDIR=/tmp"}
	if policy.User != "" {
		env = append(env, "USER="+policy.User, "LOGNAME="+policy.User)
	}
	env = append(env, policy.Host.Env...)
	return append(env, policy.Env...)
}

// InsidePath is the command's PATH: each --path first, in order, then DefaultPath.
func (policy Policy) InsidePath() string {
	return strings.Join(append(slices.Clone(policy.Path), DefaultPath), ":")
}

// StartDir is the command's working directory inside.
func (policy Policy) StartDir() string {
	if policy.Cwd != "" {
		return policy.Cwd
	}
	return policy.Workdir
}

func check(bwrapPath string, policy Policy, cmd []string) error {
	if len(cmd) == 0 || cmd[0] == "" {
		return errors.New("no command to run")
	}
	if !isCleanAbs(bwrapPath) {
		return &PolicyError{"bwrap", bwrapPath, "must be an absolute path"}
	}
	if !isCleanAbs(policy.Workdir) {
		return &PolicyError{"--workdir", policy.Workdir, "must be an absolute, resolved path"}
	}
	if err := RefuseWritable("--workdir", policy.Workdir, policy.Workdir, Guard{}); err != nil {
		return err
	}
	for _, path := range policy.ReadOnly {
		if !isCleanAbs(path) {
			return &PolicyError{"--ro", path, "must be an absolute, resolved path"}
		}
		if err := RefuseReadOnly("--ro", path, path); err != nil {
			return err
		}
	}
	for _, path := range policy.ReadWrite {
		if !isCleanAbs(path) {
			return &PolicyError{"--rw", path, "must be an absolute, resolved path"}
		}
		if err := RefuseWritable("--rw", path, path, Guard{}); err != nil {
			return err
		}
		if within(policy.Workdir, path) || within(path, policy.Workdir) {
			return &PolicyError{"--rw", path, "must be apart from the workdir"}
		}
	}
	if policy.Home != "" {
		if !isCleanAbs(policy.Home) {
			return &PolicyError{"--home-dir", policy.Home, "must be an absolute, resolved path"}
		}
		if err := checkHome("--home-dir", policy.Home, policy.Home, policy.Workdir, Guard{}); err != nil {
			return err
		}
	}
	if policy.Cwd != "" && (!isCleanAbs(policy.Cwd) || !within(policy.Workdir, policy.Cwd)) {
		return &PolicyError{"--cwd", policy.Cwd, "must be a resolved path inside the workdir"}
	}
	for _, dir := range policy.Path {
		if !filepath.IsAbs(dir) || strings.Contains(dir, ":") {
			return &PolicyError{"--path", dir, "must be an absolute path without ':'"}
		}
	}
	for _, link := range policy.Links {
		if !isCleanAbs(link.Path) || !isCleanAbs(link.Target) {
			return &PolicyError{"--ro", link.Path, "a link must be an absolute, clean path to an absolute, clean target"}
		}
	}
	switch policy.Git {
	case "", GitReadOnly, GitCommit:
	default:
		return &PolicyError{"--git", string(policy.Git), "must be readonly or commit"}
	}
	for _, path := range policy.Protect {
		if !isCleanAbs(path) || !within(policy.Workdir, path) || path == policy.Workdir {
			return &PolicyError{"--protect", path, "must be a resolved path inside the workdir"}
		}
	}
	for _, entry := range policy.Env {
		if err := checkEnvEntry(entry); err != nil {
			return err
		}
	}
	return nil
}

func isCleanAbs(path string) bool {
	return filepath.IsAbs(path) && filepath.Clean(path) == path
}
