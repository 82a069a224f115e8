package netproxy

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/bwrapkit/bwrapkit/netproxy/bridge"
	"golang.org/x/sys/unix"
)

// The hand-over: the bridge inside the sandbox makes the listener and the resolver's
// sockets in the sandbox's network namespace and sends them here (package bridge says
// why); the proxy then accepts on them itself, from outside.
//
// The proxy takes exactly one hand-over per run and then closes its unix socket: the
// command starts only after the hand-over, so from its first instruction a connect to
// the socket is refused and it has no way to give the proxy a listener of its own. What
// it reaches is the proxy on the listener, which decides every upstream connection by
// the allowlist as before.

// ServeHandOver is the proxy's half: it accepts on listener (the run's unix socket) until
// one connection hands over a listener it can serve, serves it (Serve) and the resolver's
// sockets, and closes listener, so the hand-over happens at most once. Connections that
// send nothing or something else (another run's sweep checking the socket is live, a
// malformed hand-over) are answered and closed and do not count. It returns nil after the
// hand-over, or the error that ended listener before one.
func (p *Proxy) ServeHandOver(listener net.Listener) error {
	defer listener.Close()
	for {
		conn, err := listener.Accept()
		if err != nil {
			return err
		}
		unixConn, ok := conn.(*net.UnixConn)
		if !ok {
			conn.Close()
			continue
		}
		taken := p.takeHandOver(unixConn)
		conn.Close()
		if taken {
			return nil
		}
	}
}

// HandedOver says whether a bridge has handed its sockets over: until then the command
// of a run with a bridge has not started.
func (p *Proxy) HandedOver() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.handedOver
}

// takeHandOver reads one hand-over from conn, checks and serves it, and answers.
func (p *Proxy) takeHandOver(conn *net.UnixConn) bool {
	conn.SetDeadline(time.Now().Add(bridge.Wait))
	greeting, fds, err := receiveFDs(conn, len(bridge.Greeting), bridge.MaxHandOver)
	if err != nil {
		if len(fds) > 0 || greeting != "" {
			fmt.Fprintf(conn, "refused: %v\n", err)
		}
		return false
	}
	if err := p.serveHandOver(greeting, fds); err != nil {
		fmt.Fprintf(conn, "refused: %v\n", err)
		return false
	}
	fmt.Fprintln(conn, bridge.OK)
	return true
}

// serveHandOver takes the descriptors of one hand-over (it owns them: each is served or
// closed): the first must be the sandbox's listener (checkListener), the rest are the
// resolver's sockets. A listener that does not pass refuses the whole hand-over.
func (p *Proxy) serveHandOver(greeting string, fds []int) error {
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	if greeting != bridge.Greeting {
		closeAll()
		return fmt.Errorf("not a hand-over (%q)", greeting)
	}
	if len(fds) == 0 {
		return errors.New("no listener was handed over")
	}
	if err := checkListener(fds[0]); err != nil {
		closeAll()
		return fmt.Errorf("the listener handed over: %w", err)
	}
	file := os.NewFile(uintptr(fds[0]), "sandbox listener")
	listener, err := net.FileListener(file) // a copy of its own
	file.Close()
	if err != nil {
		closeAll()
		return err
	}
	p.mu.Lock()
	if p.closed || p.handedOver {
		p.mu.Unlock()
		listener.Close()
		closeAll()
		return errors.New("takes one hand-over per run, and this proxy has had it or has ended")
	}
	p.handedOver = true
	p.listeners = append(p.listeners, listener)
	p.mu.Unlock()
	if p.Resolver {
		p.serveResolver(fds[1:]) // bound before the answer: the command's first lookup finds them
	} else {
		for _, fd := range fds[1:] {
			unix.Close(fd)
		}
	}
	go p.Serve(listener)
	return nil
}

// checkListener: the descriptor is a listening TCP socket over IPv4 or IPv6 without
// SO_REUSEPORT (another socket could otherwise join its port and take its connections),
// of a network namespace other than the proxy's own: a listener of the host's would let
// whatever reaches the host use the proxy.
func checkListener(fd int) error {
	if socketType, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || socketType != unix.SOCK_STREAM {
		return fmt.Errorf("not a stream socket (%v)", err)
	}
	if protocol, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL); err != nil || protocol != unix.IPPROTO_TCP {
		return fmt.Errorf("not a TCP socket (%v)", err)
	}
	if listening, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || listening != 1 {
		return fmt.Errorf("not listening (%v)", err)
	}
	if reusePort, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT); err != nil || reusePort != 0 {
		return fmt.Errorf("SO_REUSEPORT is set, so another socket could share its port (%v)", err)
	}
	return checkForeignNamespace(fd)
}

// checkForeignNamespace: the socket belongs to a network namespace other than the proxy's.
// The namespaces' cookies (SO_NETNS_COOKIE, Linux 5.14) say so without privilege; before
// them, the namespace itself (SIOCGSKNS), which the kernel shows only to a holder of
// CAP_NET_ADMIN over its owner: the caller of an unprivileged bwrap is that, the caller of
// a setuid one is not (so there only a kernel with cookies serves the proxy).
func checkForeignNamespace(fd int) error {
	if theirs, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE); err == nil {
		if ours, err := ownNetnsCookie(); err == nil {
			if theirs == ours {
				return errors.New("a socket of the host's own network namespace")
			}
			return nil
		}
	}
	netns, err := unix.IoctlRetInt(fd, unix.SIOCGSKNS)
	if err != nil {
		return fmt.Errorf("the socket's network namespace: %w", err)
	}
	defer unix.Close(netns)
	var theirs, ours unix.Stat_t
	if err := unix.Fstat(netns, &theirs); err != nil {
		return err
	}
	if err := unix.Stat("/proc/self/ns/net", &ours); err != nil {
		return err
	}
	if theirs.Dev == ours.Dev && theirs.Ino == ours.Ino {
		return errors.New("a socket of the host's own network namespace")
	}
	return nil
}

// ownNetnsCookie is the cookie of the proxy's own network namespace, from a socket made
// for the question.
func ownNetnsCookie() (uint64, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
}

// receiveFDs reads one message of at most size bytes carrying at most max descriptors.
// The kernel closes any beyond what the buffer holds (and says so with MSG_CTRUNC,
// refused here). On an error the descriptors received are closed.
func receiveFDs(conn *net.UnixConn, size, max int) (string, []int, error) {
	data := make([]byte, size)
	oob := make([]byte, unix.CmsgSpace(max*4))
	n, oobn, flags, _, err := conn.ReadMsgUnix(data, oob)
	if err != nil {
		return "", nil, err
	}
	var fds []int
	messages, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return string(data[:n]), nil, err
	}
	for _, message := range messages {
		rights, err := unix.ParseUnixRights(&message)
		if err == nil {
			fds = append(fds, rights...)
		}
	}
	if flags&unix.MSG_CTRUNC != 0 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return string(data[:n]), nil, errors.New("more descriptors than a hand-over has")
	}
	return string(data[:n]), fds, nil
}
