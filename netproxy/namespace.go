package netproxy

import (
	"fmt"
	"os"
	"runtime"

	"github.com/bwrapkit/bwrapkit/netproxy/bridge"
	"golang.org/x/sys/unix"
)

// Entering the sandbox's network namespace from outside. The bridge exists because
// sockets belong to the namespace they are made in, and only a process in the sandbox's
// namespace can make them there. A caller that may enter that namespace itself (root, or
// any caller with CAP_SYS_ADMIN in its own user namespace: setns(2) asks for it there and
// in the user namespace that owns the target, which bwrap made on the caller's behalf)
// makes them from outside instead, on one thread for a moment, and no bridge runs inside:
// one program start less in front of every command, and nothing of bwrapkit bound in.

// CanEnterNamespaces reports whether this process may make the sandbox's sockets itself
// (ServeNamespace): it tries setns(2) into its own network namespace, which asks for the
// same capability and passes the same seccomp filter as entering the sandbox's.
func CanEnterNamespaces() bool {
	own, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return false
	}
	defer own.Close()
	return inNamespace(own, func() error { return nil }) == nil
}

// ServeNamespace makes the sandbox's listener (on bridge.Address) and the resolver's
// sockets in netns (the sandbox's /proc/PID/ns/net) and serves them, exactly as a
// bridge's hand-over would: the same checks (serveHandOver), the one hand-over per run.
func (p *Proxy) ServeNamespace(netns *os.File) error {
	var fds []int
	err := inNamespace(netns, func() (err error) {
		fds, err = socketsHere()
		return err
	})
	if err != nil {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return fmt.Errorf("making the proxy's sockets in the sandbox's network namespace: %w", err)
	}
	return p.serveHandOver(bridge.Greeting, fds)
}

// inNamespace runs work in netns. setns(2) moves only the calling thread, so work runs on
// a goroutine of its own, locked to its thread, which returns to its own namespace before
// anything else may run on it; if it cannot, the thread ends with the goroutine and is
// never reused.
func inNamespace(netns *os.File, work func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		defer own.Close()
		if err := unix.Setns(int(netns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread() // still in its own namespace
			done <- os.NewSyscallError("setns", err)
			return
		}
		err = work()
		if unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

// socketsHere makes the listener and the resolver's sockets in the calling thread's
// network namespace: the descriptors a bridge would hand over, in the same order.
func socketsHere() ([]int, error) {
	listener, err := bridge.ListenInside(bridge.Address)
	if err != nil {
		return nil, err
	}
	defer listener.Close()
	fd, err := unix.FcntlInt(listener.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("fcntl", err)
	}
	return append([]int{fd}, bridge.ResolverSockets()...), nil
}
