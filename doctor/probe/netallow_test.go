package probe

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestNetAllowWithFileOps: the net-allow probe does the file operations it is given (the
// run it shares with workdir-vetting) and reports them, whatever the proxy does: here
// there is none, and the hand-over fails.
func TestNetAllowWithFileOps(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	got := observeNetAllow([]string{filepath.Join(dir, "no-socket"), "127.0.0.1:0", "http://allowed.invalid/", "http://denied.invalid/", "mkdir:sub", "create:sub/honest"})
	if got.FS == nil || len(got.FS.Ops) != 2 || got.FS.Ops[0].Error != "" || got.FS.Ops[1].Error != "" {
		t.Fatalf("file operations: %+v", got.FS)
	}
	if _, err := os.Stat(filepath.Join(dir, "sub", "honest")); err != nil {
		t.Errorf("the file was not made: %v", err)
	}
	if got.Error == "" || got.Allowed.Status != 0 {
		t.Errorf("with no proxy to hand the listener to: %+v", got)
	}
	if plain := observeNetAllow([]string{filepath.Join(dir, "no-socket"), "127.0.0.1:0", "http://a.invalid/", "http://d.invalid/"}); plain.FS != nil {
		t.Errorf("no operations asked, yet %+v", plain.FS)
	}
}

// TestGetReadsWhatServersSend: the probe's GET, against Go's HTTP server taking it as a
// proxy would (an absolute URL in the request line), reads the status and the body's first
// 512 bytes of a sized, a chunked and a long response.
func TestGetReadsWhatServersSend(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Host == "" || r.Host != r.URL.Host {
			http.Error(w, "not a proxy request: "+r.RequestURI, http.StatusBadRequest)
			return
		}
		switch r.URL.Path {
		case "/sized":
			w.Write([]byte("token-123"))
		case "/chunked":
			w.Write([]byte("first "))
			w.(http.Flusher).Flush()
			w.Write([]byte("second"))
		case "/long":
			w.Write([]byte(strings.Repeat("x", 5000)))
		default:
			http.Error(w, "refused: not on --net-allow", http.StatusForbidden)
		}
	}))
	defer server.Close()
	proxy := server.Listener.Addr().String()
	for _, tc := range []struct {
		path, body string
		status     int
	}{
		{"/sized", "token-123", 200},
		{"/chunked", "first second", 200},
		{"/long", strings.Repeat("x", 512), 200},
		{"/denied", "refused: not on --net-allow\n", 403},
	} {
		got := get(proxy, "http://allowed.invalid:8080"+tc.path)
		if got.Error != "" || got.Status != tc.status || got.Body != tc.body {
			t.Errorf("%s: %+v, want %d %q", tc.path, got, tc.status, tc.body)
		}
	}
	if got := get(proxy, "https://allowed.invalid/"); got.Error == "" {
		t.Errorf("an https URL: %+v, want an error", got)
	}
}

// TestDialTCP: the probe's dialer connects to IPv4 and IPv6 loopback listeners, and says
// a refused connection is one; an address that is no IP and port is an error, not a panic.
func TestDialTCP(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		listener, err := net.Listen(network, map[string]string{"tcp4": "127.0.0.1:0", "tcp6": "[::1]:0"}[network])
		if err != nil {
			t.Logf("%s: no loopback listener here: %v", network, err)
			continue
		}
		address := listener.Addr().String()
		conn, err := dialTCP(address, 2*time.Second)
		if err != nil {
			t.Errorf("%s: %v", address, err)
		} else {
			conn.Close()
		}
		listener.Close()
		if conn, err := dialTCP(address, 2*time.Second); err == nil || !errors.Is(err, unix.ECONNREFUSED) {
			t.Errorf("%s closed: %v, want connection refused", address, err)
			if conn != nil {
				conn.Close()
			}
		}
	}
	if _, err := dialTCP("localhost:80", time.Second); err == nil {
		t.Errorf("a host name: no error")
	}
}
