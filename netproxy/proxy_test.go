package netproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// loopbackNames is the proxy's resolver seam: these names lead to loopback, as a
// registry's name would lead to the registry. (Clients send localhost and 127.0.0.1
// around any proxy, so the tests never use them.)
func loopbackNames(ctx context.Context, host string) ([]netip.Addr, error) {
	switch host {
	case "registry.example.com", "pkg.mirror.test", "other.test":
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

// startProxy serves p on a loopback port, as it serves the listener a sandbox's bridge
// hands over (handover_test.go hands one over from another network namespace); it
// returns the proxy URL.
func startProxy(t testing.TB, p *Proxy) *url.URL {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(listener)
	t.Cleanup(func() { listener.Close() })
	return &url.URL{Scheme: "http", Host: listener.Addr().String()}
}

func clientThrough(proxy *url.URL, server *httptest.Server) *http.Client {
	transport := &http.Transport{Proxy: http.ProxyURL(proxy)}
	if server != nil && server.TLS != nil {
		transport.TLSClientConfig = &tls.Config{RootCAs: server.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	}
	return &http.Client{Transport: transport, Timeout: 10 * time.Second}
}

func onPort(server *httptest.Server, name string) string {
	_, port, _ := net.SplitHostPort(server.Listener.Addr().String())
	return net.JoinHostPort(name, port)
}

// TestProxyAllowsAndRefuses: an allowed name is reached over CONNECT (HTTPS) and plain
// HTTP, resolved by the proxy; a name outside the list is refused with a 403 whose
// reason and body name the flags, without any connection to it; both are recorded.
func TestProxyAllowsAndRefuses(t *testing.T) {
	var denied int
	allowedServer := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "from the registry") }))
	defer allowedServer.Close()
	plainServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "plain "+r.Host+" "+r.URL.Path+" "+r.Header.Get("Proxy-Authorization"))
	}))
	defer plainServer.Close()
	deniedServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { denied++ }))
	defer deniedServer.Close()

	allow, _ := ParseAllowlist([]string{onPort(allowedServer, "registry.example.com"), "pkg.mirror.test"})
	proxy := &Proxy{Allow: allow, Resolve: loopbackNames}
	proxyURL := startProxy(t, proxy)

	tlsClient := clientThrough(proxyURL, allowedServer)
	response, err := tlsClient.Get("https://" + onPort(allowedServer, "registry.example.com") + "/pkg")
	if err != nil {
		t.Fatalf("allowed HTTPS: %v", err)
	}
	body, _ := io.ReadAll(response.Body)
	response.Body.Close()
	if string(body) != "from the registry" {
		t.Errorf("allowed HTTPS body %q", body)
	}

	request, _ := http.NewRequest("GET", "http://"+onPort(plainServer, "pkg.mirror.test")+"/simple/", nil)
	request.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
	response, err = clientThrough(proxyURL, nil).Do(request)
	if err != nil {
		t.Fatalf("allowed HTTP: %v", err)
	}
	body, _ = io.ReadAll(response.Body)
	response.Body.Close()
	if want := "plain " + onPort(plainServer, "pkg.mirror.test") + " /simple/ "; string(body) != want {
		t.Errorf("allowed HTTP body %q, want %q (the proxy's own headers never go on)", body, want)
	}

	_, err = clientThrough(proxyURL, nil).Get("https://" + onPort(deniedServer, "other.test") + "/")
	if err == nil || !strings.Contains(err.Error(), "not in --net-allow") || !strings.Contains(err.Error(), "--net") {
		t.Errorf("denied HTTPS: %v, want the refusal naming --net-allow", err)
	}
	response, err = clientThrough(proxyURL, nil).Get("http://" + onPort(deniedServer, "other.test") + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(response.Body)
	response.Body.Close()
	if response.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "--net-allow") {
		t.Errorf("denied HTTP: %d %q", response.StatusCode, body)
	}
	if denied != 0 {
		t.Errorf("the denied server was reached %d times", denied)
	}
	got := fmt.Sprint(proxy.Denied())
	if want := fmt.Sprint([]string{onPort(deniedServer, "other.test")}); got != want {
		t.Errorf("Denied() = %s, want %s", got, want)
	}
	if attempts := proxy.Attempts(); len(attempts) != 3 {
		t.Errorf("Attempts() = %+v, want the two allowed and the denied host", attempts)
	}
}

// TestProxyEmptyListRefusesEverything: with no allowlist (run without --net) every
// request gets the 403 that names --net and --net-allow.
func TestProxyEmptyListRefusesEverything(t *testing.T) {
	proxyURL := startProxy(t, &Proxy{Resolve: loopbackNames})
	_, err := clientThrough(proxyURL, nil).Get("https://registry.example.com/")
	if err == nil || !strings.Contains(err.Error(), "no network in this sandbox; run with --net") || !strings.Contains(err.Error(), "--net-allow") {
		t.Errorf("no allowlist: %v", err)
	}
}

// TestProxyWildcardNeverReachesHostLocal: a name under a wildcard that resolves to
// loopback (this host's services) is not dialled; the same name allowed exactly is.
func TestProxyWildcardNeverReachesHostLocal(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "local") }))
	defer server.Close()
	for _, tc := range []struct {
		rule  string
		reach bool
	}{{"*.mirror.test", false}, {"pkg.mirror.test", true}} {
		allow, _ := ParseAllowlist([]string{tc.rule})
		proxyURL := startProxy(t, &Proxy{Allow: allow, Resolve: loopbackNames})
		response, err := clientThrough(proxyURL, nil).Get("http://" + onPort(server, "pkg.mirror.test") + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(response.Body)
		response.Body.Close()
		if reached := string(body) == "local"; reached != tc.reach {
			t.Errorf("rule %s: reached %v (%d %q), want %v", tc.rule, reached, response.StatusCode, body, tc.reach)
		}
	}
}

// TestProxyRefusesNonProxyRequests: an origin-form request is no proxy request.
func TestProxyRefusesNonProxyRequests(t *testing.T) {
	proxyURL := startProxy(t, &Proxy{Resolve: loopbackNames})
	conn, err := net.Dial("tcp", proxyURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET / HTTP/1.1\r\nHost: registry.example.com\r\n\r\n")
	response, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || response.StatusCode != http.StatusBadRequest {
		t.Errorf("origin-form request: %v %v", response, err)
	}
}

// TestListenRemovesAbandonedSocketDirs: a socket directory whose proxy is gone (a
// SIGKILLed run) is removed by the next Listen; one whose proxy still listens is kept.
func TestListenRemovesAbandonedSocketDirs(t *testing.T) {
	base := t.TempDir()
	getenv := func(name string) string {
		if name == "TMPDIR" {
			return base
		}
		return ""
	}
	live, liveDir, err := Listen(getenv)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	dead, deadDir, err := Listen(getenv)
	if err != nil {
		t.Fatal(err)
	}
	dead.(*net.UnixListener).SetUnlinkOnClose(false) // as a killed process leaves it
	dead.Close()
	// A run setting up: its directory made, its socket not yet bound. Fresh, so kept.
	settingUp, err := os.MkdirTemp(base, socketDirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	longAgo := time.Now().Add(-time.Minute)
	if err := os.Chtimes(deadDir, longAgo, longAgo); err != nil {
		t.Fatal(err)
	}
	next, nextDir, err := Listen(getenv)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if _, err := os.Stat(deadDir); !os.IsNotExist(err) {
		t.Errorf("the abandoned %s is still there (%v)", deadDir, err)
	}
	for _, dir := range []string{liveDir, nextDir, settingUp} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("a live proxy's %s was removed: %v", dir, err)
		}
	}
}

// TestProxyWildcardNeverReachesTheHostsOwnAddresses: a service the host listens with on
// all addresses (0.0.0.0) is as much the host's own on its network address as on
// loopback, so a DNS answer for a wildcard's name that gives one of the host's interface
// addresses is not dialled either; naming the host exactly still reaches it.
func TestProxyWildcardNeverReachesTheHostsOwnAddresses(t *testing.T) {
	var own netip.Addr
	addrs, _ := net.InterfaceAddrs()
	for _, addr := range addrs {
		if prefix, err := netip.ParsePrefix(addr.String()); err == nil && !hostLocal(prefix.Addr()) {
			own = prefix.Addr()
			break
		}
	}
	if !own.IsValid() {
		t.Skip("this host has no address but loopback and link-local ones")
	}
	listener, err := net.Listen("tcp", netip.AddrPortFrom(own, 0).String())
	if err != nil {
		t.Skip(err)
	}
	server := &httptest.Server{Listener: listener, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "host") })}}
	server.Start()
	defer server.Close()
	resolve := func(ctx context.Context, host string) ([]netip.Addr, error) {
		if host == "own.mirror.test" {
			return []netip.Addr{own}, nil
		}
		return nil, fmt.Errorf("no such host %s", host)
	}
	for _, tc := range []struct {
		rule  string
		reach bool
	}{{"*.mirror.test", false}, {"own.mirror.test", true}} {
		allow, _ := ParseAllowlist([]string{tc.rule})
		proxyURL := startProxy(t, &Proxy{Allow: allow, Resolve: resolve})
		response, err := clientThrough(proxyURL, nil).Get("http://" + onPort(server, "own.mirror.test") + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(response.Body)
		response.Body.Close()
		if reached := string(body) == "host"; reached != tc.reach {
			t.Errorf("rule %s: reached %v (%d %q), want %v", tc.rule, reached, response.StatusCode, body, tc.reach)
		}
	}
}
