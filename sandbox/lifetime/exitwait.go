package lifetime

import (
	"os"

	"golang.org/x/sys/unix"
)

// ParkUntilExited returns once pid, a child not yet reaped, has exited, having waited
// parked in the runtime's poller on its pidfd. exec.Cmd.Wait blocks in the kernel, which
// holds one of the runtime's Ps for the whole run and keeps its monitor thread waking
// every 20 µs to see whether to take it back: a tenth of a run's CPU. After this, Wait
// only reaps. Without a pollable pidfd (before Linux 5.10) it returns at once, and Wait
// blocks as before.
func ParkUntilExited(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	parkOnPidfd(fd)
}

// parkOnPidfd parks until the process of fd, a non-blocking pidfd, has exited, and closes
// fd; false when it could not wait (it then returns at once).
func parkOnPidfd(fd int) bool {
	pidfd := os.NewFile(uintptr(fd), "pidfd")
	defer pidfd.Close()
	raw, err := pidfd.SyscallConn()
	if err != nil {
		return false
	}
	// A pidfd turns readable when its process exits; it cannot be read.
	err = raw.Read(func(fd uintptr) bool {
		n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		return n != 0
	})
	return err == nil
}
