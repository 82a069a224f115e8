package netproxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/bwrapkit/bwrapkit/netproxy/bridge"
	"golang.org/x/sys/unix"
)

// joinedMode makes the test binary joinedHelper (see TestMain).
const joinedMode = "joined"

// joinedHelper is the child of TestServeNamespaceBeforeLoopbackIsUp, in a network
// namespace of its own: it says whether its lo is up, waits for the word (the proxy has
// made its sockets here meanwhile), brings lo up as bwrap does, and uses the proxy's
// listener and resolver as a command would.
func joinedHelper(target string) (report helperReport) {
	fmt.Println("ready", loopbackState())
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		report.HandOver = "waiting for the word: " + err.Error()
		return report
	}
	if err := loopbackUp(); err != nil {
		report.HandOver = "loopback: " + err.Error()
		return report
	}
	_, report.Allowed = fetch(clientThrough(&url.URL{Scheme: "http", Host: bridge.Address}, nil), target)
	report.Lookup, report.LookupMillis = lookupInside("inside.example.org")
	return report
}

// loopbackState is "up" or "down" for lo in the caller's network namespace.
func loopbackState() string {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err.Error()
	}
	defer unix.Close(fd)
	ifreq, err := unix.NewIfreq("lo")
	if err != nil {
		return err.Error()
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifreq); err != nil {
		return err.Error()
	}
	if ifreq.Uint16()&unix.IFF_UP != 0 {
		return "up"
	}
	return "down"
}

// TestServeNamespaceBeforeLoopbackIsUp: the proxy makes the sandbox's sockets from
// outside while bwrap is still building the sandbox, which may be before bwrap brings up
// its lo (the run does not wait for that). Made in a namespace whose lo is down, the
// listener and each resolver socket, [::1]:53 included, are bound all the same
// (IP_FREEBIND), and once lo is up an allowed host is reached through the listener and a
// lookup is answered at once.
func TestServeNamespaceBeforeLoopbackIsUp(t *testing.T) {
	if !CanEnterNamespaces() {
		t.Skip("making sockets in another network namespace needs CAP_SYS_ADMIN (root)")
	}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "from the registry") }))
	defer server.Close()
	allow, _ := ParseAllowlist([]string{onPort(server, "registry.example.com")})
	proxy := &Proxy{Allow: allow, Resolve: loopbackNames, Resolver: true}
	t.Cleanup(proxy.Close)

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), helperMode+"="+joinedMode, helperURL+"=http://"+onPort(server, "registry.example.com")+"/blob")
	child.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	word, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	child.Stderr = &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	lines := bufio.NewReader(out)
	if ready, err := lines.ReadString('\n'); err != nil || ready != "ready down\n" {
		t.Fatalf("the child's namespace before the proxy joins it: %q %v, want lo down (else this proves nothing)\n%s", ready, err, stderr.String())
	}

	netns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", child.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	defer netns.Close()
	if err := proxy.ServeNamespace(netns); err != nil {
		t.Fatalf("making the sockets while lo is down: %v", err)
	}
	// ::1 appears only once lo is up (127.0.0.1 binds on a down lo on recent kernels):
	// without IP_FREEBIND the IPv6 resolver would be missing, and nothing would say so.
	want := []string{"127.0.0.1:53"}
	if fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err == nil {
		unix.Close(fd)
		want = append(want, "[::1]:53")
	}
	var bound []string
	proxy.mu.Lock()
	for _, conn := range proxy.resolvers {
		bound = append(bound, conn.LocalAddr().String())
	}
	proxy.mu.Unlock()
	if !slices.Equal(bound, want) {
		t.Errorf("resolver sockets bound while lo was down: %v, want %v", bound, want)
	}

	if _, err := io.WriteString(word, "go\n"); err != nil {
		t.Fatal(err)
	}
	var report helperReport
	if err := json.NewDecoder(lines).Decode(&report); err != nil {
		t.Fatalf("the child's report: %v\n%s", err, stderr.String())
	}
	if err := child.Wait(); err != nil {
		t.Fatalf("the child: %v\n%s", err, stderr.String())
	}
	if report.HandOver != "" {
		t.Fatalf("the child: %s", report.HandOver)
	}
	if report.Allowed != "from the registry" {
		t.Errorf("the allowed host through the listener made before lo was up: %q", report.Allowed)
	}
	if report.Lookup == "" || strings.Contains(report.Lookup, "timeout") || report.LookupMillis > 5000 {
		t.Errorf("a lookup at the resolver bound before lo was up: %q after %d ms, want a refusal at once", report.Lookup, report.LookupMillis)
	}
}
