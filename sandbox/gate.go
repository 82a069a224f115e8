package sandbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/sandbox/land"
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
//     the filter written. If bwrapkit dies first, bwrap reads no program (at most the
//     preamble that marks the end of its setup, see filterpipe.go, which the kernel
//     rejects alone), so the command never runs unchecked.

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
	if err != nil {
		file.Close()
		// Without /proc (bwrapkit itself in a chroot or a container without one) no
		// descriptor can be tied to its path, so no bind can be proven.
		return source{}, fmt.Errorf("cannot prove which file the descriptor opened for %s names: %w; bwrapkit needs /proc mounted where it runs (mount -t proc proc /proc)", path, err)
	}
	if named != path {
		file.Close()
		return source{}, fmt.Errorf("%s changed after it was checked (it now leads to %s)", path, named)
	}
	return source{path: path, file: file, dev: uint64(stat.Dev), ino: stat.Ino}, nil
}

// expectation is what the gate must find at one path inside the finished sandbox.
type expectation struct {
	path       string
	dev, ino   uint64
	readOnly   bool // the mount there must be read-only
	mountPoint bool // the path must be a mount point of its own (a pinned parent)
	// lower, for the transactional workdir: the overlay there must show exactly this
	// directory's entries (see verifyOverlay).
	lower *os.File
	upper string
}

// expectations are the gate's checks for a run's binds, from the opened sources.
func expectations(run resolved, sources map[string]source) []expectation {
	var expected []expectation
	for _, bind := range run.binds {
		src := sources[bind.path]
		if bind.option == overlayOption {
			expected = append(expected, expectation{path: bind.path, lower: src.file, upper: run.overlay.upper})
			continue
		}
		expected = append(expected, expectation{
			path: bind.path, dev: src.dev, ino: src.ino,
			readOnly:   bind.option == "--ro-bind",
			mountPoint: bind.option == "--bind" && bind.path != run.workdir,
		})
	}
	return expected
}

// awaitSetup waits until the sandboxed child's setup is complete and returns the child's
// root, open. Setup is over when bwrap reads its seccomp filter: with a primed filter
// pipe (filterpipe.go) that is one event, and the root must then be finished (no longer
// the host's, and read-only: `--remount-ro /` is bwrap's last mount step, and the final
// pivot into the new root comes after it), or the sandbox is not the one asked for.
// Without one, the root is checked at each change of the child's mount table until it is.
//
// Either wait is event-driven: the pipe turns writable, or the child's /proc/PID/mounts
// turns POLLPRI on every change of its mount namespace (bwrap clones the child into it,
// so the file opened now watches the sandbox's); its pidfd turns readable when it exits,
// and ctx's end is a descriptor too. A fixed-interval poll cost CPU that grew with load,
// and starved bwrap under contention.
func awaitSetup(ctx context.Context, pid int, filter *heldFilter) (*os.File, error) {
	var host unix.Stat_t
	if err := unix.Stat("/", &host); err != nil {
		return nil, err
	}
	if filter.primed {
		if err := filter.awaitRead(ctx); err != nil {
			return nil, err
		}
		root, done, err := inspectRoot(pid, host)
		if err == nil && !done {
			err = errors.New("bwrap asked for its seccomp filter before the sandbox's root was finished (still the host's, or writable)")
		}
		return root, err
	}
	watch, err := watchSetup(ctx, pid)
	if err != nil {
		return nil, err
	}
	defer watch.close()
	for {
		// Checked after the watch was armed: a change between the check and the wait
		// still wakes the wait.
		root, done, err := inspectRoot(pid, host)
		if err != nil || done {
			return root, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := watch.wait(); err != nil {
			return nil, err
		}
	}
}

// setupWatch is what wakes awaitSetup: a mount change, the child's exit, or ctx's end.
type setupWatch struct {
	fds       []unix.PollFd
	mounts    int
	pidfd     int
	cancelled int // an eventfd written when ctx ends
	stop      func() bool
}

// setupSafetyNet bounds one wait where the kernel gives no pidfd (before 5.3), so a child
// that died unseen is still noticed; with a pidfd it is never what wakes a launch.
const setupSafetyNet = 100 // milliseconds

func watchSetup(ctx context.Context, pid int) (*setupWatch, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/mounts"
	mounts, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, goneIf(fmt.Errorf("cannot watch the sandbox being built (%s): %w", path, err))
	}
	cancelled, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(mounts)
		return nil, fmt.Errorf("cannot watch the sandbox being built: eventfd: %w", err)
	}
	w := &setupWatch{mounts: mounts, cancelled: cancelled, pidfd: -1}
	w.fds = []unix.PollFd{{Fd: int32(mounts), Events: unix.POLLPRI}, {Fd: int32(cancelled), Events: unix.POLLIN}}
	if pidfd, err := unix.PidfdOpen(pid, 0); err == nil {
		w.pidfd = pidfd
		w.fds = append(w.fds, unix.PollFd{Fd: int32(pidfd), Events: unix.POLLIN})
	}
	w.stop = context.AfterFunc(ctx, func() {
		one := [8]byte{1}
		_, _ = unix.Write(cancelled, one[:])
	})
	return w, nil
}

// wait returns when something may have changed; the caller looks again.
func (w *setupWatch) wait() error {
	timeout := -1
	if w.pidfd < 0 {
		timeout = setupSafetyNet
	}
	for {
		_, err := unix.Poll(w.fds, timeout)
		if err == nil {
			if w.pidfd >= 0 && w.fds[2].Revents&unix.POLLIN != 0 {
				return childGoneError{errors.New("the sandbox's child exited while it was being built")}
			}
			return nil
		}
		if !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("watching the sandbox being built: %w", err)
		}
	}
}

// childGoneError is the gate losing sight of a sandbox whose child is gone: bwrap's child
// died during setup (a refused proc mount, say) while the gate was looking. Then bwrap's
// own failure, not the gate's, is the cause (see lostSightGrace).
type childGoneError struct{ err error }

func (e childGoneError) Error() string { return e.err.Error() }
func (e childGoneError) Unwrap() error { return e.err }

// goneIf marks err as the child being gone when the kernel said so: no such file or
// process, or EINVAL, which /proc/PID/mounts gives for a task that is exiting (its
// namespaces are already released). A wrong mark costs only lostSightGrace: the gate's
// word stands unless bwrap then exits on its own with its own error.
func goneIf(err error) error {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) || errors.Is(err, unix.EINVAL) {
		return childGoneError{err}
	}
	return err
}

func (w *setupWatch) close() {
	w.stop()
	unix.Close(w.mounts)
	unix.Close(w.cancelled)
	if w.pidfd >= 0 {
		unix.Close(w.pidfd)
	}
}

func inspectRoot(pid int, host unix.Stat_t) (*os.File, bool, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/root"
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false, goneIf(fmt.Errorf("cannot inspect the sandbox being built (%s): %w", path, err))
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
	if want.lower != nil {
		return verifyOverlay(fd, want)
	}
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

// overlayfsMagic is overlayfs's statfs type.
const overlayfsMagic = 0x794c7630

// verifyOverlay proves the transactional workdir is bwrapkit's overlay of the checked
// directory. bwrap opens an overlay's layers by path (--overlay-src takes no
// descriptor), so a second sandbox could swap a component of the project's path for a
// link while this one is built and have another directory become the lower layer. The
// overlay shows the lower layer's own inode numbers for the entries only it holds (and,
// layers on one file system, the upper directory's for its root), so: the mount must be
// a writable overlayfs whose root is the run's fresh upper layer (on one file system),
// and its entries must be, name for name and inode for inode, those of the directory
// held open since it was checked. A swapped lower layer would have to hold hard links to
// every one of the project's entries and nothing else, and directories cannot be
// hard-linked; an empty project swapped for an empty directory shows nothing.
func verifyOverlay(fd int, want expectation) error {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return fmt.Errorf("inside the sandbox, %s: %w", want.path, err)
	}
	if fs.Type != overlayfsMagic || fs.Flags&unix.ST_RDONLY != 0 {
		return fmt.Errorf("inside the sandbox, %s is not the writable overlay of the project (its mount landed elsewhere)", want.path)
	}
	var root, upper, lower unix.Stat_t
	if unix.Fstat(fd, &root) != nil || unix.Stat(want.upper, &upper) != nil || unix.Fstat(int(want.lower.Fd()), &lower) != nil {
		return fmt.Errorf("inside the sandbox, %s cannot be inspected", want.path)
	}
	acrossFS := upper.Dev != lower.Dev
	if !acrossFS && root.Ino != upper.Ino {
		return fmt.Errorf("inside the sandbox, %s is an overlay whose upper layer is not this run's", want.path)
	}
	// The project may change meanwhile (another run of it landing, an editor saving), so
	// the two are compared at a moment the checked directory held still: its listing the
	// same before and after the sandbox's. A swapped lower layer stays swapped, so a
	// mismatch is looked at again a few times before it refuses the run; at 16 runs of
	// one project at once, 3 in 64 were refused on one look. bwrapkit's own landings (runs
	// of this project, or of one nested in it, ending) wait while the two are compared;
	// other writers do not, hence the looks.
	release := land.HoldLandings(filepath.Dir(want.upper), landingWaitBound)
	defer release()
	changing := fmt.Errorf("%s kept changing while the sandbox was checked (%d looks); run again when it is still", want.path, overlayLooks)
	var mismatch error
	pause := time.Millisecond
	for look := range overlayLooks {
		if look > 0 {
			time.Sleep(pause)
			pause *= 2
		}
		before, err := entryIDs(int(want.lower.Fd()), acrossFS)
		if errors.Is(err, unix.ENOENT) {
			mismatch = changing // an entry went between the listing and its stat
			continue
		}
		if err != nil {
			return fmt.Errorf("%s cannot be listed: %w", want.path, err)
		}
		inside, insideErr := entryIDs(fd, acrossFS)
		after, err := entryIDs(int(want.lower.Fd()), acrossFS)
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("%s cannot be listed: %w", want.path, err)
		}
		switch {
		case err != nil || !maps.Equal(before, after):
			mismatch = changing
		case insideErr != nil:
			mismatch = fmt.Errorf("inside the sandbox, %s cannot be listed: %w", want.path, insideErr)
		default:
			if mismatch = sameEntries(want.path, inside, before, acrossFS); mismatch == nil {
				return nil
			}
		}
	}
	return mismatch
}

// overlayLooks bounds how many times verifyOverlay lists the two sides (1, 2, 4, ... ms
// apart: 127 ms in all) before a difference refuses the run; landingWaitBound, how long
// it waits for a landing under way before it looks without holding landings off.
const (
	overlayLooks     = 8
	landingWaitBound = 2 * time.Second
)

// sameEntries: the overlay shows, name for name and inode for inode, the checked
// directory's entries and no others. When the layers lie on different file systems
// (acrossFS: a project on another disk than bwrapkit's cache) and overlayfs maps no
// inode numbers (xino off, the default), it numbers each directory itself: a directory
// is then known by what only the kernel sets, its birth and change times to the
// nanosecond, with its mode and link count. Every run of a project with a subdirectory
// there was refused as a swapped path.
func sameEntries(path string, inside, checked map[string]entryID, acrossFS bool) error {
	if len(inside) != len(checked) {
		return fmt.Errorf("inside the sandbox, %s does not show the checked directory (%d entries, not %d): a path was swapped while the sandbox was built", path, len(inside), len(checked))
	}
	for name, want := range checked {
		got, ok := inside[name]
		if !ok || !sameEntry(got, want, acrossFS) {
			return fmt.Errorf("inside the sandbox, %s/%s is not the checked directory's entry: a path was swapped while the sandbox was built", path, name)
		}
	}
	return nil
}

func sameEntry(got, want entryID, acrossFS bool) bool {
	if acrossFS && want.dir {
		return got.dir && got.born == want.born && got.changed == want.changed && got.mode == want.mode && got.nlink == want.nlink
	}
	return sameLowerInode(got.ino, want.ino)
}

// sameLowerInode: overlayfs reports a lower entry's inode number as it is, or (layers
// on different file systems, xino) with the layer's number in the high bits.
func sameLowerInode(got, want uint64) bool {
	return got == want || want < 1<<32 && got&(1<<32-1) == want
}

// entryID is what the gate compares of an entry.
type entryID struct {
	ino           uint64
	dir           bool
	mode          uint16
	nlink         uint32
	born, changed unix.StatxTimestamp
}

// entryIDs lists a directory's entries with their identities, never following a
// symlink: the inode number, and for a directory across file systems (see sameEntries)
// its times, mode and links. Nothing else, so the project holds still for the gate
// when only a file's content or times change (a log being written).
func entryIDs(dirFD int, acrossFS bool) (map[string]entryID, error) {
	fd, err := unix.Openat(dirFD, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	dir := os.NewFile(uintptr(fd), ".")
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	entries := make(map[string]entryID, len(names))
	for _, name := range names {
		var stat unix.Statx_t
		if err := unix.Statx(fd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &stat); err != nil {
			return nil, err
		}
		id := entryID{ino: stat.Ino, dir: stat.Mode&unix.S_IFMT == unix.S_IFDIR}
		if acrossFS && id.dir {
			id.mode, id.nlink, id.born, id.changed = stat.Mode, stat.Nlink, stat.Btime, stat.Ctime
		}
		entries[name] = id
	}
	return entries, nil
}
