package sandbox

import (
	"fmt"
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// keepInheritedFDsOut marks every descriptor above stderr close-on-exec. Go opens its
// own files close-on-exec, but descriptors this process inherited from its caller (an
// agent's socket, a CI runner's log pipe) are not, and bwrap hands everything it
// inherits to the sandboxed command. The status and filter pipes and the bind sources
// still reach bwrap: ExtraFiles are dup'd into place in the child, which clears the flag
// on the copy. If neither close_range nor /proc/self/fd can do it, the launch is refused
// (as runc does): the command would otherwise get every inherited descriptor.
func keepInheritedFDsOut() error {
	if unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC) == nil {
		return nil
	}
	// Kernels before 5.11 lack close_range's CLOEXEC flag: walk the table instead.
	return markCloseOnExec("/proc/self/fd")
}

// markCloseOnExec walks a descriptor table listing (the seam a test can fail).
func markCloseOnExec(listing string) error {
	entries, err := os.ReadDir(listing)
	if err != nil {
		return fmt.Errorf("cannot keep inherited descriptors out of the sandbox: close_range(CLOSE_RANGE_CLOEXEC) is unsupported and %s cannot be listed: %w", listing, err)
	}
	for _, entry := range entries {
		if fd, err := strconv.Atoi(entry.Name()); err == nil && fd > 2 {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF {
				return fmt.Errorf("cannot mark descriptor %d close-on-exec: %w", fd, err)
			}
		}
	}
	return nil
}
