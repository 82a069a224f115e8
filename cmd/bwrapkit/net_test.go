package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/netproxy"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// loopbackName is a host name this machine resolves to loopback that clients still send
// through a proxy: not localhost (Go, curl and others never proxy localhost or
// 127.0.0.1). Debian maps the machine's own name in /etc/hosts; the proxy resolves on
// the host, so the name reaches the test's loopback servers through it.
func loopbackName(t *testing.T) string {
	t.Helper()
	var candidates []string
	if name, err := os.Hostname(); err == nil {
		candidates = append(candidates, name)
	}
	if data, err := os.ReadFile("/etc/hosts"); err == nil {
		scanner := bufio.NewScanner(bytes.NewReader(data))
		for scanner.Scan() {
			fields := strings.Fields(strings.SplitN(scanner.Text(), "#", 2)[0])
			if len(fields) > 1 && (strings.HasPrefix(fields[0], "127.") || fields[0] == "::1") {
				candidates = append(candidates, fields[1:]...)
			}
		}
	}
	for _, name := range candidates {
		if name == "localhost" || strings.HasPrefix(name, "localhost.") {
			continue
		}
		addrs, err := net.LookupIP(name)
		if err == nil && len(addrs) > 0 && slices.ContainsFunc(addrs, func(ip net.IP) bool { return ip.Equal(net.IPv4(127, 0, 0, 1)) }) {
			return name
		}
	}
	livetest.Skip(t, "no host name other than localhost resolves to 127.0.0.1 here (/etc/hosts maps none)")
	return ""
}

type netReport struct {
	ExitCode int      `json:"exit_code"`
	Allowed  []string `json:"network_allowed"`
	Denied   []string `json:"network_denied"`
}

func readNetReport(t *testing.T, path string) netReport {
	t.Helper()
	var report netReport
	data, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(data, &report) != nil {
		t.Fatalf("report %s: %v %s", path, err, data)
	}
	return report
}

// refusedBound is how soon a refused network attempt must have failed.
const refusedBound = 5 * time.Second

// TestE2ENetworkOffRefusesAtOnce: without --net, curl, npm, pip and go each fail within
// 5 s (not after minutes of retries) with a message naming --net, and the report lists
// the host each tried. On every bwrap, as root and (make test-unprivileged) as nobody.
func TestE2ENetworkOffRefusesAtOnce(t *testing.T) {
	tools := []struct {
		name    string
		command []string
		host    string
		start   []string // the same tool doing nothing on the network: its own start-up cost
	}{
		{"curl", []string{"curl", "-sS", "https://example.org/"}, "example.org:443", []string{"curl", "--version"}},
		// Each tool's own default registry: the report must name whatever host it tried.
		{"npm", []string{"npm", "ping"}, "", []string{"npm", "--version"}},
		{"pip", []string{"python3", "-m", "pip", "download", "--no-deps", "-d", "/tmp/d", "requests"}, "", []string{"python3", "-m", "pip", "--version"}},
		{"go", []string{"go", "mod", "download", "example.com/m@v1.0.0"}, "", []string{"go", "version"}},
	}
	for _, bwrap := range livetest.Bwraps(t) {
		environ, _ := attackEnv(t, bwrap.Path)
		workdir := livetest.TempDir(t)
		for _, tool := range tools {
			t.Run(bwrap.Name+"/"+tool.name, func(t *testing.T) {
				if _, err := exec.LookPath(tool.command[0]); err != nil && tool.name != "go" {
					t.Fatalf("%s is not installed (scripts/ci-deps.sh installs it)", tool.command[0])
				}
				report := filepath.Join(livetest.TempDir(t), "report.json")
				args := append([]string{"run", "--workdir", workdir, "--path", goBin, "--report", report, "--"}, tool.command...)
				// The bound is for the refusal: what the sandbox and the tool's own start
				// cost on this (loaded) machine right now, measured by the tool doing
				// nothing, comes on top.
				began := time.Now()
				if got := binaryRun(t, environ, append([]string{"run", "--workdir", workdir, "--path", goBin, "--"}, tool.start...)...); got.status != 0 {
					t.Fatalf("%v: %d %s", tool.start, got.status, got.stderr)
				}
				ctx, cancel := context.WithTimeout(context.Background(), refusedBound+time.Since(began))
				defer cancel()
				cmd := exec.CommandContext(ctx, builtBinary, args...)
				cmd.Env = environ
				out, err := cmd.CombinedOutput()
				if ctx.Err() != nil {
					t.Fatalf("%s was still trying after %v: %s", tool.name, refusedBound, out)
				}
				if err == nil || !strings.Contains(string(out), "--net") || !strings.Contains(string(out), "--net-allow") {
					t.Errorf("%s without --net: %v\n%s\nwant a failure naming --net and --net-allow", tool.name, err, out)
				}
				got := readNetReport(t, report)
				if len(got.Denied) == 0 || len(got.Allowed) != 0 || (tool.host != "" && !slices.Contains(got.Denied, tool.host)) {
					t.Errorf("%s: report network_denied %v allowed %v, want the host it tried denied (%s)", tool.name, got.Denied, got.Allowed, tool.host)
				}
				for _, host := range got.Denied {
					if !strings.HasSuffix(host, ":443") || !strings.Contains(string(out), host) {
						t.Errorf("%s: denied %s: want an HTTPS host named on stderr too", tool.name, host)
					}
				}
			})
		}
	}
}

// moduleZip is example.test/m v1.0.0's module zip.
func moduleZip(t *testing.T) []byte {
	var archive bytes.Buffer
	writer := zip.NewWriter(&archive)
	for name, body := range map[string]string{"go.mod": "module example.test/m\n", "m.go": "package m\n"} {
		file, _ := writer.Create("example.test/m@v1.0.0/" + name)
		io.WriteString(file, body)
	}
	writer.Close()
	return archive.Bytes()
}

// goModuleProxy serves one module, example.test/m v1.0.0, as GOPROXY does.
func goModuleProxy(t *testing.T) http.Handler {
	archive := bytes.NewBuffer(moduleZip(t))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/example.test/m/@v/v1.0.0.info":
			io.WriteString(w, `{"Version":"v1.0.0","Time":"2026-01-01T00:00:00Z"}`)
		case "/example.test/m/@v/v1.0.0.mod":
			io.WriteString(w, "module example.test/m\n")
		case "/example.test/m/@v/v1.0.0.zip":
			w.Write(archive.Bytes())
		case "/-/ping":
			io.WriteString(w, "{}")
		case "/index":
			io.WriteString(w, "hello from the allowed registry")
		default:
			http.NotFound(w, r)
		}
	})
}

// TestE2ENetAllowReachesOnlyTheList: with --net-allow, a loopback registry named by a
// host name is reached through the proxy by curl (HTTP and HTTPS), npm and go; another
// server on the same host, not on the list, is refused at once and never reached; the
// report and stderr say which was which.
func TestE2ENetAllowReachesOnlyTheList(t *testing.T) {
	name := loopbackName(t)
	registry := httptest.NewServer(goModuleProxy(t))
	defer registry.Close()
	secure := httptest.NewTLSServer(goModuleProxy(t))
	defer secure.Close()
	var strayHits atomic.Int32
	stray := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { strayHits.Add(1) }))
	defer stray.Close()
	at := func(server *httptest.Server) string {
		_, port, _ := net.SplitHostPort(server.Listener.Addr().String())
		return net.JoinHostPort(name, port)
	}
	script := strings.Join([]string{
		"curl -fsS http://" + at(registry) + "/index",
		"curl -fsSk https://" + at(secure) + "/index",
		"npm ping --registry http://" + at(registry) + "/",
		"GOPROXY=http://" + at(registry) + " GOSUMDB=off GOFLAGS=-mod=mod go mod download -json example.test/m@v1.0.0 | grep -q '\"Zip\"' && echo go-ok",
		"curl -fsS http://" + at(stray) + "/ && echo STRAY-REACHED",
		"exit 0",
	}, "\n")
	for _, bwrap := range livetest.Bwraps(t) {
		t.Run(bwrap.Name, func(t *testing.T) {
			environ, _ := attackEnv(t, bwrap.Path)
			report := filepath.Join(livetest.TempDir(t), "report.json")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, builtBinary, "run", "--workdir", livetest.TempDir(t), "--path", goBin,
				"--net-allow", at(registry), "--net-allow", at(secure), "--report", report, "--", "sh", "-c", script)
			cmd.Env = environ
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("run: %v\n%s\n%s", err, stdout.String(), stderr.String())
			}
			out := stdout.String()
			if strings.Count(out, "hello from the allowed registry") != 2 || !strings.Contains(out, "go-ok") || strings.Contains(out, "STRAY-REACHED") {
				t.Errorf("inside: stdout %q, stderr %q", out, stderr.String())
			}
			if !strings.Contains(stderr.String(), "refused "+at(stray)+": not in --net-allow") {
				t.Errorf("stderr does not name the refused host: %q", stderr.String())
			}
			got := readNetReport(t, report)
			if !slices.Equal(got.Denied, []string{at(stray)}) || !slices.Contains(got.Allowed, at(registry)) || !slices.Contains(got.Allowed, at(secure)) {
				t.Errorf("report: allowed %v denied %v", got.Allowed, got.Denied)
			}
		})
	}
	if strayHits.Load() != 0 {
		t.Errorf("the server not on the list was reached %d times", strayHits.Load())
	}
}

// TestRunNetAllowRefusesBadInput: a URL, a bare wildcard, or --net with --net-allow is
// bad usage before anything runs.
func TestRunNetAllowRefusesBadInput(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	environ, _ := attackEnv(t, bwrap)
	for _, args := range [][]string{
		{"--net-allow", "https://index.example.com/simple"},
		{"--net-allow", "*.org"},
		{"--net", "--net-allow", "index.example.com"},
	} {
		argv := append(append([]string{"run", "--workdir", livetest.TempDir(t)}, args...), "--", "true")
		if got := binaryRun(t, environ, argv...); got.status != exitUsage || !strings.Contains(got.stderr, "--net-allow") {
			t.Errorf("%v: %d %q, want 2 naming --net-allow", args, got.status, got.stderr)
		}
	}
}

// TestE2ENetBridgeLeavesOnlyTheCommand: without --net the bridge hands its sockets to the
// proxy and execs the command in its own place, so the command's parent is bwrap's own
// process, not a bwrapkit waiting inside; the proxy's socket took its one hand-over and
// refuses the command, which therefore cannot hand the proxy a listener of its own (a
// second bridge started inside fails closed and never runs its command); the proxy still
// serves and refuses through the sandbox's listener, and the report lists the refusal.
// Where bwrapkit may enter the sandbox's network namespace itself (root, as CI runs this
// package first), it makes the listener from outside: then nothing of bwrapkit is bound in
// at all (no bridge to start a second time: 127) and the rest holds the same. The other
// path is the one make test-unprivileged takes, running this package as nobody.
func TestE2ENetBridgeLeavesOnlyTheCommand(t *testing.T) {
	joined := netproxy.CanEnterNamespaces() // the built binary runs as this test's user
	script := strings.Join([]string{
		`echo "parent: $(cat /proc/$PPID/comm)"`,
		sandbox.BridgeInside + " " + sandbox.BridgeCommand + " --socket " + sandbox.ProxySocketInside +
			` --listen 127.0.0.1:3129 -- sh -c 'echo SECOND-RAN'; echo "second bridge: $?"`,
		`curl -sS -o /dev/null -w 'proxied: %{http_code}\n' http://example.org/`,
		"exit 7",
	}, "\n")
	for _, bwrap := range livetest.Bwraps(t) {
		t.Run(bwrap.Name, func(t *testing.T) {
			environ, _ := attackEnv(t, bwrap.Path)
			report := filepath.Join(livetest.TempDir(t), "report.json")
			got := binaryRun(t, environ, "run", "--workdir", livetest.TempDir(t), "--report", report, "--", "sh", "-c", script)
			if got.status != 7 {
				t.Fatalf("status %d, want the command's own 7: %s %s", got.status, got.stdout, got.stderr)
			}
			lines := strings.Split(got.stdout, "\n")
			if !strings.HasPrefix(lines[0], "parent: bwrap") || lines[0] == "parent: bwrapkit" {
				t.Errorf("the command runs under the bridge: %q", got.stdout)
			}
			switch {
			case joined && (!slices.Contains(lines, "second bridge: 127") || slices.Contains(lines, "SECOND-RAN")):
				t.Errorf("joined from outside, a bridge is still bound inside: stdout %q stderr %q", got.stdout, got.stderr)
			case !joined && (!slices.Contains(lines, "second bridge: 125") || slices.Contains(lines, "SECOND-RAN") ||
				!strings.Contains(got.stderr, "could not hand the sandbox's proxy sockets") || !strings.Contains(got.stderr, "the command was not started")):
				t.Errorf("a second hand-over from inside: stdout %q stderr %q, want it refused and its command never run", got.stdout, got.stderr)
			}
			if !slices.Contains(lines, "proxied: 403") {
				t.Errorf("the proxy through the sandbox's listener: %q", got.stdout)
			}
			if denied := readNetReport(t, report).Denied; !slices.Equal(denied, []string{"example.org:80"}) {
				t.Errorf("report network_denied %v, want example.org:80", denied)
			}
		})
	}
}
