package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy serves HTTP proxy requests (absolute-form HTTP, and CONNECT for HTTPS and
// anything else over TLS) for one sandbox, allowing only Allow's hosts. It runs outside
// the sandbox and accepts on a listener of the sandbox's own loopback, which the bridge
// inside hands over through a unix socket bound in (ServeHandOver); Serve serves any
// listener.
type Proxy struct {
	Allow Allowlist
	// Resolve turns a name into addresses on the host (the sandbox has no resolver of
	// its own). Nil is the host's resolver.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// DialTimeout bounds each connection to an allowed host; zero is 10 s.
	DialTimeout time.Duration
	// Resolver: answer the sandbox's resolver address with REFUSED and record the names
	// asked there, on sockets the bridge hands over (resolver.go). False: lookups inside
	// fail as the kernel answers them (port unreachable), unreported.
	Resolver bool

	mu         sync.Mutex
	tried      map[string]*Attempt
	conns      sync.WaitGroup
	open       atomic.Int64   // connections being served
	handedOver bool           // the one hand-over of the run was taken (handover.go)
	listeners  []net.Listener // the sandbox's, taken over
	resolvers  []net.PacketConn
	closed     bool
}

// Attempt is one destination the sandbox asked for.
type Attempt struct {
	Host    string `json:"host"` // host:port as asked
	Allowed bool   `json:"allowed"`
	Count   int    `json:"count"`
	// Lookup: the name was asked of the sandbox's own resolver address (a tool that
	// resolves names itself), not of the proxy; Host is the bare name then.
	Lookup bool   `json:"lookup,omitempty"`
	Error  string `json:"error,omitempty"` // why an allowed host was still not reached
}

// Flags is how a user changes what the proxy allows; every refusal names them.
const Flags = "--net (the host's whole network) or --net-allow HOST[:PORT]"

// refusal is the reason phrase and body of a 403: the reason phrase is what Go's and
// pip's clients print of a refused CONNECT, the body what curl -v and npm show.
func (p *Proxy) refusal(target string) (reason, body string) {
	if len(p.Allow) == 0 {
		reason = "bwrapkit: no network in this sandbox; run with " + Flags
		return reason, reason + "\n(" + target + " was refused)\n"
	}
	reason = fmt.Sprintf("bwrapkit: %s is not in --net-allow (%s); add it with --net-allow, or use --net", target, strings.Join(p.Allow.Strings(), ", "))
	return reason, reason + "\n"
}

// Serve accepts connections until listener closes, then waits for the ones it took.
func (p *Proxy) Serve(listener net.Listener) error {
	defer p.conns.Wait()
	for {
		conn, err := listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		if p.open.Add(1) > maxConns {
			p.open.Add(-1)
			message := fmt.Sprintf("bwrapkit: the sandbox has %d connections open through the proxy, the most it serves at once", maxConns)
			writeStatus(conn, http.StatusServiceUnavailable, message, message+"\n")
			conn.Close()
			continue
		}
		p.conns.Add(1)
		go func() {
			defer p.conns.Done()
			defer p.open.Add(-1)
			defer conn.Close()
			p.handle(conn)
		}()
	}
}

// Attempts are the destinations asked for so far, in the order first asked.
func (p *Proxy) Attempts() []Attempt {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Attempt, 0, len(p.tried))
	for _, attempt := range p.tried {
		out = append(out, *attempt)
	}
	slices.SortFunc(out, func(a, b Attempt) int { return strings.Compare(a.Host, b.Host) })
	return out
}

// Denied are the refused destinations, host:port each.
func (p *Proxy) Denied() []string {
	var denied []string
	for _, attempt := range p.Attempts() {
		if !attempt.Allowed {
			denied = append(denied, attempt.Host)
		}
	}
	return denied
}

func (p *Proxy) record(target string, allowed bool, failure error) {
	p.recordAttempt(Attempt{Host: target, Allowed: allowed}, failure)
}

// maxAttempts bounds the distinct destinations recorded: a command can ask for new names
// as fast as it sends datagrams, and the record lives in the caller's process.
const maxAttempts = 1000

func (p *Proxy) recordAttempt(first Attempt, failure error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tried == nil {
		p.tried = map[string]*Attempt{}
	}
	attempt := p.tried[first.Host]
	if attempt == nil && len(p.tried) >= maxAttempts {
		return // refused all the same, only not listed
	}
	if attempt == nil {
		attempt = &first
		p.tried[first.Host] = attempt
	}
	attempt.Count++
	if failure != nil {
		attempt.Error = failure.Error()
	}
}

// headerTimeout bounds how long a client may take to send its request line and headers.
const headerTimeout = 30 * time.Second

// maxHeaderBytes bounds a request line and its headers (a proxy request's are a few
// hundred bytes; net/http's server allows 1 MiB): http.ReadRequest alone reads them whole
// into memory, and the proxy's memory is the caller's, outside the run's cgroup (a
// command's 400 MiB header line held 900 MB of bwrapkit's).
const maxHeaderBytes = 32 << 10

// maxConns bounds the connections served at once (a sandbox may open 20,000 per
// process), so headers and tunnels' buffers hold at most a few tens of MiB of the
// caller's memory. A build's parallel downloads use a few dozen.
const maxConns = 512

func (p *Proxy) handle(client net.Conn) {
	client.SetReadDeadline(time.Now().Add(headerTimeout))
	limited := &io.LimitedReader{R: client, N: maxHeaderBytes}
	reader := bufio.NewReader(limited)
	request, err := http.ReadRequest(reader)
	if err != nil {
		if limited.N <= 0 {
			message := fmt.Sprintf("bwrapkit: the request's line and headers exceed %d bytes", maxHeaderBytes)
			writeStatus(client, http.StatusRequestHeaderFieldsTooLarge, message, message+"\n")
		}
		return
	}
	limited.N = math.MaxInt64 // the body and a tunnel's bytes are not headers
	client.SetReadDeadline(time.Time{})
	host, port, target, err := destination(request)
	if err != nil {
		writeStatus(client, http.StatusBadRequest, "bwrapkit: "+err.Error(), "bwrapkit's proxy: "+err.Error()+"\n")
		return
	}
	if !p.Allow.Allows(host, port) {
		p.record(target, false, nil)
		reason, body := p.refusal(target)
		writeStatus(client, http.StatusForbidden, reason, body)
		return
	}
	upstream, err := p.dial(request.Context(), host, port)
	p.record(target, true, err)
	if err != nil {
		message := fmt.Sprintf("bwrapkit: %s is allowed but could not be reached: %v", target, err)
		writeStatus(client, http.StatusBadGateway, message, message+"\n")
		return
	}
	defer upstream.Close()
	if request.Method == http.MethodConnect {
		if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		if buffered := reader.Buffered(); buffered > 0 {
			head, _ := reader.Peek(buffered)
			if _, err := upstream.Write(head); err != nil {
				return
			}
		}
		splice(client, upstream)
		return
	}
	// Plain HTTP: the request goes on in origin form, one per connection (the client
	// opens another for its next request), without the proxy's own headers.
	request.Header.Del("Proxy-Connection")
	request.Header.Del("Proxy-Authorization")
	request.Close = true
	if err := request.Write(upstream); err != nil {
		return
	}
	io.Copy(client, upstream)
}

// destination is where a request asks to go, host:port as the client asked it.
func destination(request *http.Request) (host string, port int, target string, err error) {
	authority := request.Host
	defaultPort := "80"
	switch {
	case request.Method == http.MethodConnect:
		defaultPort = "443"
	case request.URL.IsAbs() && request.URL.Scheme == "http":
		authority = request.URL.Host
	default:
		return "", 0, "", fmt.Errorf("this is an HTTP proxy: send absolute http:// URLs or CONNECT (request %q)", request.RequestURI)
	}
	name, portText, splitErr := net.SplitHostPort(authority)
	if splitErr != nil {
		name, portText = authority, defaultPort
	}
	port, err = strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 || name == "" {
		return "", 0, "", fmt.Errorf("bad destination %q", authority)
	}
	return name, port, net.JoinHostPort(name, portText), nil
}

// dial resolves host on the host and connects to the first address that answers. A
// literal address is used as it is.
func (p *Proxy) dial(ctx context.Context, host string, port int) (net.Conn, error) {
	timeout := p.DialTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var addrs []netip.Addr
	if addr, err := netip.ParseAddr(host); err == nil {
		if addr.Zone() != "" {
			return nil, fmt.Errorf("%s names an IPv6 zone, which the proxy never dials", host)
		}
		addrs = []netip.Addr{addr}
	} else {
		resolve := p.Resolve
		if resolve == nil {
			resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			}
		}
		if addrs, err = resolve(ctx, host); err != nil {
			return nil, err
		}
		if !p.exactlyNamed(host) {
			// A wildcard covers names the domain's owner (or a DNS answer) chooses: none
			// of them may lead to this host's own services or the cloud metadata address.
			// A service listening on all addresses is the host's on each interface's
			// address as much as on loopback.
			own := ownAddrs()
			addrs = slices.DeleteFunc(addrs, func(addr netip.Addr) bool { return hostLocal(addr) || slices.Contains(own, addr.Unmap()) })
			if len(addrs) == 0 {
				return nil, fmt.Errorf("%s resolves only to this host's own, loopback or link-local addresses, which a wildcard rule never reaches; allow it by its exact name", host)
			}
		}
	}
	var dialer net.Dialer
	var lastErr error
	for _, addr := range addrs {
		conn, err := dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(addr.Unmap(), uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		lastErr = err
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("%s has no address", host)
	}
	return nil, lastErr
}

// exactlyNamed: a rule names host itself (not through a wildcard).
func (p *Proxy) exactlyNamed(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	return slices.ContainsFunc(p.Allow, func(rule Rule) bool { return !rule.Wildcard && rule.Host == host })
}

// ownAddrs are the addresses of this host's interfaces (the proxy runs in the host's
// network namespace), read at each wildcard dial since they change.
func ownAddrs() []netip.Addr {
	addrs, _ := net.InterfaceAddrs()
	var own []netip.Addr
	for _, addr := range addrs {
		if prefix, err := netip.ParsePrefix(addr.String()); err == nil {
			own = append(own, prefix.Addr().Unmap())
		}
	}
	return own
}

func hostLocal(addr netip.Addr) bool {
	addr = addr.Unmap()
	return addr.IsLoopback() || addr.IsLinkLocalUnicast() || addr.IsUnspecified() || addr.IsMulticast()
}

func writeStatus(conn net.Conn, code int, reason, body string) {
	reason = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, reason)
	fmt.Fprintf(conn, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", code, reason, len(body), body)
}

// splice copies both ways until both sides are done, passing each half-close on.
func splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	copyHalf := func(dst, src net.Conn) {
		io.Copy(dst, src)
		if closer, ok := dst.(interface{ CloseWrite() error }); ok {
			closer.CloseWrite()
		} else {
			dst.Close()
		}
		done <- struct{}{}
	}
	go copyHalf(a, b)
	go copyHalf(b, a)
	<-done
	<-done
}
