package sandbox

import (
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// keepInheritedFDsOut marks every descriptor above stderr close-on-exec. Go opens its
// own files close-on-exec, but descriptors this process inherited from its caller (an
// agent's socket, a CI runner's log pipe) are not, and bwrap hands everything it
// inherits to the sandboxed command. The status pipe still reaches bwrap: ExtraFiles are
// dup'd into place in the child, which clears the flag on the copy.
func keepInheritedFDsOut() {
	if unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	// Kernels before 5.11 lack close_range's CLOEXEC flag: walk the table instead.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, entry := range entries {
		if fd, err := strconv.Atoi(entry.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}
