package netproxy

import (
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/bwrapkit/bwrapkit/netproxy/bridge"
	"golang.org/x/sys/unix"
)

// The resolver's port, 53, is privileged even on the sandbox's own loopback, and no
// resolver asks another. Nothing inside holds that capability over the sandbox's
// network namespace: bwrap owns the namespace by an outer user namespace and runs the
// command in a nested one, so even a capability added with --cap-add is refused there.
// The caller outside owns that outer user namespace, and the kernel checks bind(2)
// against the credentials of whoever calls it, not of whoever made the socket. So the
// bridge makes two unbound UDP sockets inside (in the sandbox's namespace, where every
// socket it makes is) and hands them over with its listener (handover.go); the proxy
// binds them to port 53 and answers on them. Nothing runs with a capability inside, and
// nothing is executed outside.

// serveResolver binds each socket to its address and answers on it; a socket that is
// not a fresh UDP socket of another network namespace than this one is closed unbound.
func (p *Proxy) serveResolver(fds []int) {
	for i, fd := range fds {
		conn, err := bindResolver(fd, i)
		if err != nil {
			continue
		}
		p.mu.Lock()
		closed := p.closed
		if !closed {
			p.resolvers = append(p.resolvers, conn)
		}
		p.mu.Unlock()
		if closed {
			conn.Close()
			continue
		}
		go ServeDNS(conn, func(name string) { p.recordAttempt(Attempt{Host: name, Lookup: true}, nil) })
	}
}

// bindResolver checks one handed-over socket and binds it to bridge.ResolverAddresses[i]. It
// owns fd: closed on failure, else owned by the returned conn.
func bindResolver(fd, i int) (conn net.PacketConn, err error) {
	file := os.NewFile(uintptr(fd), "resolver")
	defer file.Close() // FilePacketConn keeps a copy of its own
	if err := checkResolverSocket(fd); err != nil {
		return nil, err
	}
	if i >= len(bridge.ResolverAddresses) {
		return nil, errors.New("more sockets than resolver addresses")
	}
	// Free to bind before the address is up: a proxy that makes the sandbox's sockets
	// itself does so while bwrap may not have brought up lo, and ::1 exists only from
	// then. IP_FREEBIND at the IP level serves an IPv6 socket too, on every kernel
	// (IPV6_FREEBIND, from Linux 4.15, sets the same flag).
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_FREEBIND, 1); err != nil {
		return nil, os.NewSyscallError("setsockopt IP_FREEBIND", err)
	}
	if err := unix.Bind(fd, bridge.ResolverAddresses[i]); err != nil {
		return nil, err
	}
	return net.FilePacketConn(file)
}

// checkResolverSocket: the socket is UDP of the family its address needs, unbound, and
// in a network namespace other than the proxy's own: port 53 of the host is never bound
// for a sandbox, whatever it sends.
func checkResolverSocket(fd int) error {
	socketType, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil || socketType != unix.SOCK_DGRAM {
		return fmt.Errorf("not a datagram socket (%v)", err)
	}
	if protocol, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL); err != nil || protocol != unix.IPPROTO_UDP {
		return fmt.Errorf("not a UDP socket (%v)", err)
	}
	return checkForeignNamespace(fd)
}

// Close ends what the proxy took over: the sandbox's listener and the resolver's sockets
// (which also let the sandbox's network namespace go); later hand-overs are refused. The
// caller closes the listeners it passed to Serve and ServeHandOver.
func (p *Proxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, conn := range p.resolvers {
		conn.Close()
	}
	for _, listener := range p.listeners {
		listener.Close()
	}
	p.resolvers, p.listeners = nil, nil
}
