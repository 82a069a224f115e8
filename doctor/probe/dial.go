package probe

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// dialTCP connects to address (an IP and a port: the probe is only ever given those)
// within timeout, with bare system calls: the net package would add its own start-up to
// bwrapkit-helper's, which every run starts twice (see cmd/bwrapkit-helper). The file is
// non-blocking, so its reads and writes honour deadlines.
func dialTCP(address string, timeout time.Duration) (*os.File, error) {
	addrPort, err := netip.ParseAddrPort(address)
	if err != nil {
		return nil, fmt.Errorf("%q is not an IP address and port", address)
	}
	family, port := unix.AF_INET6, int(addrPort.Port())
	var sockaddr unix.Sockaddr
	if addr := addrPort.Addr().Unmap(); addr.Is4() {
		family, sockaddr = unix.AF_INET, &unix.SockaddrInet4{Port: port, Addr: addr.As4()}
	} else {
		sockaddr = &unix.SockaddrInet6{Port: port, Addr: addr.As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.IPPROTO_TCP)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if err := connect(fd, sockaddr, time.Now().Add(timeout)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("dial tcp %s: %w", address, err)
	}
	return os.NewFile(uintptr(fd), "tcp "+address), nil
}

// connect connects the non-blocking socket fd by deadline.
func connect(fd int, sockaddr unix.Sockaddr, deadline time.Time) error {
	err := unix.Connect(fd, sockaddr)
	for errors.Is(err, unix.EINTR) {
		err = unix.Connect(fd, sockaddr)
	}
	switch {
	case errors.Is(err, unix.EISCONN):
		return nil // a connect interrupted after it went through
	case !errors.Is(err, unix.EINPROGRESS) && !errors.Is(err, unix.EALREADY):
		return err // nil: connected at once
	}
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return os.ErrDeadlineExceeded
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) || err == nil && n == 0 {
			continue
		}
		if err != nil {
			return os.NewSyscallError("poll", err)
		}
		soErr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
		if err != nil {
			return os.NewSyscallError("getsockopt", err)
		}
		if soErr != 0 {
			return unix.Errno(soErr)
		}
		return nil
	}
}
