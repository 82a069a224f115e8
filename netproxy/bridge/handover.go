// Package bridge is the inside half of the allowlist proxy: the program bwrap runs before
// the command in a sandbox without the host network. It makes the listener the proxy
// variables point at on the sandbox's loopback, hands it and the resolver's sockets to
// the proxy outside (package netproxy), and execs the command in its own place.
//
// It imports nothing of the proxy itself (no net/http): it starts on every run without
// --net, in bwrapkit-helper, the lean binary beside bwrapkit, where every package
// initialised is start-up time in front of the command.
package bridge

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The hand-over: the tools inside the sandbox reach the proxy by TCP on the sandbox's own
// loopback, a network namespace the proxy is not in. So the bridge, inside, makes that
// listener (and the resolver's sockets) in the sandbox's namespace and sends them all over
// the proxy's unix socket in one message (SCM_RIGHTS); the proxy accepts on the listener
// itself, from outside, and serves each connection directly: a socket belongs to the
// namespace it was made in, wherever its descriptor is held. The bridge closes its copies
// once the proxy has answered and execs the command, so nothing of bwrapkit stays inside
// and no byte crosses a relay.

// Address is the proxy's address on the sandbox's own loopback: the listener the bridge
// makes (ListenInside) and the proxy variables inside point at.
const Address = "127.0.0.1:3128"

// Greeting is the byte stream the descriptors ride on; the proxy refuses anything else.
const Greeting = "bwrapkit hand-over 1\n"

// Wait bounds the hand-over on both sides; past it the bridge gives up and the command
// never starts.
const Wait = 5 * time.Second

// MaxHandOver is the listener and one socket per resolver address.
const MaxHandOver = 3

// OK is the proxy's answer to a hand-over it took; any other answer is the reason it did
// not ("refused: ...").
const OK = "ok"

// ResolverAddresses are where glibc, musl and Go ask without a resolv.conf: the proxy
// binds the resolver's sockets there (port 53 is privileged inside, and only the caller
// outside holds that capability over the sandbox's network namespace).
var ResolverAddresses = []unix.Sockaddr{
	&unix.SockaddrInet4{Port: 53, Addr: [4]byte{127, 0, 0, 1}},
	&unix.SockaddrInet6{Port: 53, Addr: [16]byte{15: 1}},
}

// ListenInside makes the listener the tools' proxy variables point at (address, an IPv4
// host:port), in the caller's network namespace (inside the sandbox), for HandOver. It is
// a plain TCP listener without SO_REUSEPORT, so no other socket can share its port.
func ListenInside(address string) (*os.File, error) {
	addrPort, err := netip.ParseAddrPort(address)
	if err != nil || !addrPort.Addr().Is4() {
		return nil, fmt.Errorf("%q is not an IPv4 address and port", address)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	// Free to bind before the address is up: the proxy makes this listener from outside
	// while bwrap is still setting up the sandbox, perhaps before it brings up lo (recent
	// kernels bind 127.0.0.1 on a down lo anyway; this does not rely on it).
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_FREEBIND, 1); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("setsockopt IP_FREEBIND", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(addrPort.Port()), Addr: addrPort.Addr().As4()}); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("bind", err)
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("listen", err)
	}
	return os.NewFile(uintptr(fd), "proxy listener"), nil
}

// HandOver is the bridge's half, inside the sandbox, before the command: it sends
// listener (from ListenInside) and the resolver's unbound UDP sockets to the proxy behind
// socket, and returns once the proxy has taken them. It closes listener and every socket
// it made, whatever happens; an error means the proxy serves nothing of this sandbox and
// the command must not start.
func HandOver(socket string, listener *os.File) error {
	defer listener.Close()
	fds := []int{int(listener.Fd())}
	udp := ResolverSockets()
	defer func() {
		for _, fd := range udp {
			unix.Close(fd)
		}
	}()
	fds = append(fds, udp...)
	conn, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("socket", err)
	}
	defer unix.Close(conn)
	timeout := unix.NsecToTimeval(Wait.Nanoseconds())
	unix.SetsockoptTimeval(conn, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &timeout)
	unix.SetsockoptTimeval(conn, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &timeout)
	if err := unix.Connect(conn, &unix.SockaddrUnix{Name: socket}); err != nil {
		return fmt.Errorf("connect %s: %w", socket, err)
	}
	if err := unix.Sendmsg(conn, []byte(Greeting), unix.UnixRights(fds...), nil, 0); err != nil {
		return fmt.Errorf("sendmsg %s: %w", socket, err)
	}
	answer, err := readLine(conn)
	if err != nil {
		return fmt.Errorf("the proxy's answer: %w", err)
	}
	if answer != OK {
		return fmt.Errorf("the proxy %s", answer)
	}
	return nil
}

// ResolverSockets are unbound UDP sockets, one per resolver address the kernel can make
// (no IPv6 here: the IPv4 one alone), in the caller's network namespace. Binding port 53
// is the proxy's part.
func ResolverSockets() []int {
	var fds []int
	for _, address := range ResolverAddresses {
		domain := unix.AF_INET
		if _, ok := address.(*unix.SockaddrInet6); ok {
			domain = unix.AF_INET6
		}
		if fd, err := unix.Socket(domain, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP); err == nil {
			fds = append(fds, fd)
		}
	}
	return fds
}

// readLine reads the proxy's one-line answer (at most 512 bytes).
func readLine(fd int) (string, error) {
	var line []byte
	buffer := make([]byte, 512)
	for len(line) < len(buffer) {
		n, err := unix.Read(fd, buffer[:len(buffer)-len(line)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		if n == 0 {
			return "", errors.New("the proxy closed the connection without answering")
		}
		line = append(line, buffer[:n]...)
		if i := strings.IndexByte(string(line), '\n'); i >= 0 {
			return string(line[:i]), nil
		}
	}
	return "", errors.New("the proxy's answer is too long")
}
