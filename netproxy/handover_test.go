package netproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/netproxy/bridge"
	"golang.org/x/sys/unix"
)

// The hand-over tests run the bridge's half in a child of this test binary in a network
// namespace of its own (and the user namespace that owns it), as a sandbox's bridge is:
// the real kernel boundary, without bwrap.
const (
	helperMode   = "NETPROXY_TEST_HANDOVER"
	helperSocket = "NETPROXY_TEST_SOCKET"
	helperURL    = "NETPROXY_TEST_URL"
	insideListen = "127.0.0.1:3128"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperMode); mode != "" {
		if mode == joinedMode {
			json.NewEncoder(os.Stdout).Encode(joinedHelper(os.Getenv(helperURL)))
			os.Exit(0)
		}
		json.NewEncoder(os.Stdout).Encode(handOverHelper(mode, os.Getenv(helperSocket), os.Getenv(helperURL)))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperReport is what the child saw.
type helperReport struct {
	HandOver     string `json:"hand_over"` // "" when it succeeded, else its error
	Allowed      string `json:"allowed"`   // the allowed URL's body, or the error
	Denied       string `json:"denied"`    // the denied URL's status and body, or the error
	Lookup       string `json:"lookup"`    // a lookup at 127.0.0.1:53 inside
	LookupMillis int64  `json:"lookup_ms"`
	Again        string `json:"again"` // a second hand-over, after the first
}

// handOverHelper is the child: it brings its loopback up (a fresh namespace's is down;
// bwrap brings a sandbox's up), hands over a listener made as mode says, and if that was
// taken, uses the proxy through it as a tool would and tries to hand over a second one.
func handOverHelper(mode, socket, target string) (report helperReport) {
	if err := loopbackUp(); err != nil {
		report.HandOver = "loopback: " + err.Error()
		return report
	}
	listener, err := helperListener(mode)
	if err != nil {
		report.HandOver = "making the listener: " + err.Error()
		return report
	}
	if err := bridge.HandOver(socket, listener); err != nil {
		report.HandOver = err.Error()
		return report
	}
	client := clientThrough(&url.URL{Scheme: "http", Host: insideListen}, nil)
	_, report.Allowed = fetch(client, target)
	status, body := fetch(client, strings.Replace(target, "registry.example.com", "other.test", 1))
	report.Denied = strings.TrimPrefix(status+" "+body, " ")
	report.Lookup, report.LookupMillis = lookupInside("inside.example.org")
	second, err := bridge.ListenInside("127.0.0.1:3129")
	if err == nil {
		err = bridge.HandOver(socket, second)
	}
	report.Again = errString(err)
	return report
}

// fetch GETs target through client: the response's status and body, or no status and
// the error.
func fetch(client *http.Client, target string) (status, body string) {
	response, err := client.Get(target)
	if err != nil {
		return "", err.Error()
	}
	defer response.Body.Close()
	data, _ := io.ReadAll(response.Body)
	return response.Status, string(data)
}

// lookupInside looks name up at 127.0.0.1:53 of the caller's namespace, as a command's
// resolver would: the error ("" for none) and how long it took.
func lookupInside(name string) (string, int64) {
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", "127.0.0.1:53")
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	_, err := resolver.LookupHost(ctx, name)
	return errString(err), time.Since(began).Milliseconds()
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// helperListener is the socket the child hands over as its listener: the bridge's own
// (ListenInside), or one that must be refused.
func helperListener(mode string) (*os.File, error) {
	if mode == "bridge" {
		return bridge.ListenInside(insideListen)
	}
	socketType := unix.SOCK_STREAM
	if mode == "udp" {
		socketType = unix.SOCK_DGRAM
	}
	fd, err := unix.Socket(unix.AF_INET, socketType|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if mode == "reuseport" {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: 3128, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return nil, err
	}
	if mode == "reuseport" {
		err = unix.Listen(fd, 8)
	}
	return os.NewFile(uintptr(fd), mode), err
}

// loopbackUp sets lo up in the caller's network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifreq, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifreq); err != nil {
		return err
	}
	ifreq.SetUint16(ifreq.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifreq)
}

// runHelper runs the child in a new user and network namespace against proxy's socket.
func runHelper(t *testing.T, proxy *Proxy, mode, target string) (helperReport, string) {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "proxy.sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- proxy.ServeHandOver(listener) }()
	t.Cleanup(func() { listener.Close(); proxy.Close() })
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperMode+"="+mode, helperSocket+"="+socket, helperURL+"="+target)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		livetest.Skip(t, "no user and network namespace for the bridge's half: "+err.Error())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the child: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	var report helperReport
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("the child's report: %v: %s%s", err, stdout.String(), stderr.String())
	}
	select {
	case err := <-served:
		return report, errString(err)
	case <-time.After(100 * time.Millisecond):
		return report, "still accepting hand-overs"
	}
}

// TestHandOverServesTheSandboxDirectly: the listener made in another network namespace is
// taken over by the proxy, which accepts on it from outside: an allowed host is reached
// and a denied one refused, the resolver's port 53 in that namespace answers REFUSED at
// once and the name is recorded, and the proxy takes no second hand-over (its unix socket
// is closed once it has the first).
func TestHandOverServesTheSandboxDirectly(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "from the registry") }))
	defer server.Close()
	allow, _ := ParseAllowlist([]string{onPort(server, "registry.example.com")})
	proxy := &Proxy{Allow: allow, Resolve: loopbackNames, Resolver: true}
	report, served := runHelper(t, proxy, "bridge", "http://"+onPort(server, "registry.example.com")+"/blob")
	if report.HandOver != "" || served != "" || !proxy.HandedOver() {
		t.Fatalf("the hand-over: %q (proxy: %q, handed over %v)", report.HandOver, served, proxy.HandedOver())
	}
	if report.Allowed != "from the registry" {
		t.Errorf("the allowed host through the handed-over listener: %q", report.Allowed)
	}
	if !strings.HasPrefix(report.Denied, "403 ") || !strings.Contains(report.Denied, "--net-allow") {
		t.Errorf("the denied host: %q, want the 403 naming --net-allow", report.Denied)
	}
	if report.Lookup == "" || strings.Contains(report.Lookup, "timeout") || report.LookupMillis > 5000 {
		t.Errorf("the lookup inside: %q after %d ms, want a refusal at once", report.Lookup, report.LookupMillis)
	}
	if report.Again == "" {
		t.Errorf("a second hand-over was taken: the proxy must take one per run")
	}
	var hosts []string
	for _, attempt := range proxy.Attempts() {
		hosts = append(hosts, attempt.Host)
	}
	for _, want := range []string{onPort(server, "registry.example.com"), onPort(server, "other.test"), "inside.example.org"} {
		if !slices.Contains(hosts, want) {
			t.Errorf("attempts %v, want %s among them", hosts, want)
		}
	}
}

// TestHandOverRefusesOtherListeners: a socket that is not a plain listening TCP socket is
// refused, and the proxy keeps waiting for a real hand-over: a UDP socket, a TCP socket
// that does not listen, and a listener with SO_REUSEPORT (whose port another socket of the
// sandbox could join to take the proxy's connections), each from another namespace so
// that only the rule under test can stop it.
func TestHandOverRefusesOtherListeners(t *testing.T) {
	for mode, want := range map[string]string{"udp": "not a stream socket", "notlistening": "not listening", "reuseport": "SO_REUSEPORT"} {
		t.Run(mode, func(t *testing.T) {
			proxy := &Proxy{Resolver: true}
			report, served := runHelper(t, proxy, mode, "http://registry.example.com/")
			if !strings.Contains(report.HandOver, want) || proxy.HandedOver() || served != "still accepting hand-overs" {
				t.Errorf("hand-over of a %s socket: %q (proxy: %q), want refused with %q", mode, report.HandOver, served, want)
			}
			proxy.mu.Lock()
			defer proxy.mu.Unlock()
			if len(proxy.resolvers) != 0 || len(proxy.listeners) != 0 {
				t.Errorf("a refused hand-over left %d resolver sockets and %d listeners served", len(proxy.resolvers), len(proxy.listeners))
			}
		})
	}
}

// TestHandOverRefusesTheHostsOwnSockets: sockets of the proxy's own network namespace (a
// sandbox can make none, but a bug or another caller could hand them over) are refused,
// listener and resolver sockets alike, so the proxy never serves the host's own network
// and port 53 of the host is never taken for a sandbox. (As root the bind would succeed
// without the check; as nobody the kernel refuses it anyway.)
func TestHandOverRefusesTheHostsOwnSockets(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "proxy.sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &Proxy{Resolver: true}
	go proxy.ServeHandOver(listener)
	t.Cleanup(func() { listener.Close(); proxy.Close() })
	inside, err := bridge.ListenInside("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	err = bridge.HandOver(socket, inside)
	if err == nil || !strings.Contains(err.Error(), "host's own network namespace") {
		t.Errorf("the hand-over of this host's own sockets: %v, want refused", err)
	}
	proxy.mu.Lock()
	bound, served := len(proxy.resolvers), len(proxy.listeners)
	proxy.mu.Unlock()
	if bound != 0 || served != 0 || proxy.HandedOver() {
		t.Errorf("the proxy took this host's own sockets: %d resolvers, %d listeners", bound, served)
	}
	if !errors.Is(inside.Close(), os.ErrClosed) {
		t.Errorf("HandOver left the listener open")
	}
}
