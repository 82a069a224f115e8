package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// bwrap resolves its bind paths itself, after bwrapkit checked them: a second sandbox
// sharing a parent directory can swap a component for a symlink in between and have the
// host's /etc bound read-write. So Run closes the race twice over:
//
//  1. Every bind source is opened once (O_PATH, no symlink in its last component), the
//     descriptor's own path is compared with the checked one (an ancestor swapped for a
//     link shows up there), and bwrap binds that descriptor (--bind-fd), which it also
//     compares with what it mounted.
//  2. The gate: bwrap reads the seccomp filter only after its whole setup, just before
//     the command, so bwrapkit holds the filter back until it has inspected the finished
//     sandbox from outside (/proc/PID/root, walked without following any symlink) and
//     found every bind where it belongs: the same directory it checked, read-only where
//     it must be, and each protected path's parents pinned as mount points. Only then is
//     the filter written. If bwrapkit dies first, bwrap reads an empty filter, which the
//     kernel rejects, so the command never runs unchecked.

// source is one bind source held open from check to mount.
type source struct {
	path     string
	file     *os.File
	dev, ino uint64
}

// openSource opens a checked path and proves the descriptor names that very path.
func openSource(path string) (source, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return source{}, fmt.Errorf("opening %s to bind it: %w", path, err)
	}
	file := os.NewFile(uintptr(fd), path)
	var stat unix.Stat_t
	if err := unix.Fstat(fd, &stat); err != nil {
		file.Close()
		return source{}, fmt.Errorf("inspecting %s: %w", path, err)
	}
	if stat.Mode&unix.S_IFMT == unix.S_IFLNK {
		file.Close()
		return source{}, fmt.Errorf("%s became a symlink after it was checked", path)
	}
	named, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || named != path {
		file.Close()
		return source{}, fmt.Errorf("%s changed after it was checked (it now leads to %s)", path, orNothing(named))
	}
	return source{path: path, file: file, dev: uint64(stat.Dev), ino: stat.Ino}, nil
}

// expectation is what the gate must find at one path inside the finished sandbox.
type expectation struct {
	path       string
	dev, ino   uint64
	readOnly   bool // the mount there must be read-only
	mountPoint bool // the path must be a mount point of its own (a pinned parent)
}

// expectations are the gate's checks for policy's binds, from the opened sources.
func expectations(policy Policy, sources map[string]source) []expectation {
	var expected []expectation
	for _, bind := range binds(policy) {
		src := sources[bind.path]
		expected = append(expected, expectation{
			path: bind.path, dev: src.dev, ino: src.ino,
			readOnly:   bind.option == "--ro-bind",
			mountPoint: bind.option == "--bind" && bind.path != policy.Workdir,
		})
	}
	return expected
}

// awaitSetup waits until the sandboxed child's setup is complete: its root is no longer
// the host's and is read-only (`--remount-ro /` is bwrap's last mount step, and the
// final pivot into the new root comes after it). It returns the child's root, open.
func awaitSetup(ctx context.Context, pid int) (*os.File, error) {
	var host unix.Stat_t
	if err := unix.Stat("/", &host); err != nil {
		return nil, err
	}
	// A short sleep in the thread itself (nanosleep) rather than a Go timer: the launch
	// waits on this loop, and a timer's wake-up through the scheduler costs more than the
	// setup step it waits for. The sleep still leaves the CPU to bwrap.
	pause := unix.Timespec{Nsec: 20_000}
	for {
		root, done, err := inspectRoot(pid, host)
		if err != nil || done {
			return root, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		_ = unix.Nanosleep(&pause, nil)
	}
}

func inspectRoot(pid int, host unix.Stat_t) (*os.File, bool, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/root"
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false, fmt.Errorf("cannot inspect the sandbox being built (%s): %w", path, err)
	}
	var stat unix.Stat_t
	var fs unix.Statfs_t
	if unix.Fstat(fd, &stat) != nil || unix.Fstatfs(fd, &fs) != nil {
		unix.Close(fd)
		return nil, false, fmt.Errorf("cannot inspect the sandbox being built (%s)", path)
	}
	if (stat.Dev == host.Dev && stat.Ino == host.Ino) || fs.Flags&unix.ST_RDONLY == 0 {
		unix.Close(fd)
		return nil, false, nil
	}
	return os.NewFile(uintptr(fd), path), true, nil
}

// verifyMounts checks every expectation inside the sandbox whose root is open.
func verifyMounts(root *os.File, expected []expectation) error {
	for _, want := range expected {
		if err := verifyOne(int(root.Fd()), want); err != nil {
			return err
		}
	}
	return nil
}

func verifyOne(rootFD int, want expectation) error {
	fd, parent, err := walkNoSymlinks(rootFD, want.path)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	defer unix.Close(parent)
	var stat unix.Stat_t
	var fs unix.Statfs_t
	if err := unix.Fstat(fd, &stat); err != nil {
		return fmt.Errorf("inside the sandbox, %s: %w", want.path, err)
	}
	if uint64(stat.Dev) != want.dev || stat.Ino != want.ino {
		return fmt.Errorf("inside the sandbox, %s is not the directory that was checked (a path was swapped while the sandbox was built)", want.path)
	}
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return fmt.Errorf("inside the sandbox, %s: %w", want.path, err)
	}
	if readOnly := fs.Flags&unix.ST_RDONLY != 0; want.readOnly && !readOnly {
		return fmt.Errorf("inside the sandbox, %s is writable but must be read-only (its bind landed elsewhere)", want.path)
	}
	if want.mountPoint {
		mount, err := mountID(fd)
		if err != nil {
			return err
		}
		parentMount, err := mountID(parent)
		if err != nil {
			return err
		}
		if mount == parentMount {
			return fmt.Errorf("inside the sandbox, %s is not pinned as a mount point (its bind landed elsewhere)", want.path)
		}
	}
	return nil
}

// walkNoSymlinks opens path (absolute) below rootFD one component at a time, refusing
// any symlink; it returns the path's descriptor and its parent directory's.
func walkNoSymlinks(rootFD int, path string) (int, int, error) {
	parent, err := unix.Openat(rootFD, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, -1, err
	}
	names := strings.Split(strings.Trim(path, "/"), "/")
	for i, name := range names {
		next, err := unix.Openat(parent, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(parent)
			return -1, -1, fmt.Errorf("inside the sandbox, %s cannot be reached: %w", path, err)
		}
		var stat unix.Stat_t
		if err := unix.Fstat(next, &stat); err != nil || stat.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(next)
			unix.Close(parent)
			return -1, -1, fmt.Errorf("inside the sandbox, %s is reached through a symlink (%s): a path was swapped while the sandbox was built", path, name)
		}
		if i == len(names)-1 {
			return next, parent, nil
		}
		unix.Close(parent)
		parent = next
	}
	return -1, -1, fmt.Errorf("inside the sandbox: %q is not a path", path)
}

// mountID is the id of the mount fd lies on (statx, Linux 5.8).
func mountID(fd int) (uint64, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &stx); err != nil {
		return 0, fmt.Errorf("statx: %w", err)
	}
	if stx.Mask&unix.STATX_MNT_ID == 0 {
		return 0, errors.New("this kernel does not report mount ids (statx STATX_MNT_ID, Linux 5.8), so protected paths cannot be verified")
	}
	return stx.Mnt_id, nil
}
