package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// The real clients through --net-allow: git (smart HTTP, and HTTPS through CONNECT)
// against the host's own git http-backend, pip and npm against loopback registries. Each
// client finds the proxy only through the variables bwrapkit sets; none is told about it.

const gitHTTPBackend = "/usr/lib/git-core/git-http-backend"

// gitServer is a git host on loopback: a bare repository served by the host's real git
// http-backend (CGI, smart protocol), and the requests it was asked.
type gitServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string // "METHOD /path?query"
}

func (s *gitServer) Addr() net.Addr { return s.Listener.Addr() }

func (s *gitServer) asked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// newGitServer serves root's repositories; certName, when set, makes it HTTPS with a
// certificate for that name, written as a CA file to caFile.
func newGitServer(t *testing.T, root, certName, caFile string) *gitServer {
	t.Helper()
	server := &gitServer{}
	backend := &cgi.Handler{Path: gitHTTPBackend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	server.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		server.mu.Lock()
		server.requests = append(server.requests, r.Method+" "+r.URL.RequestURI())
		server.mu.Unlock()
		backend.ServeHTTP(w, r)
	}))
	if certName != "" {
		cert, pemCert := selfSigned(t, certName)
		server.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		if err := os.WriteFile(caFile, pemCert, 0o644); err != nil {
			t.Fatal(err)
		}
		server.StartTLS()
	} else {
		server.Start()
	}
	t.Cleanup(server.Close)
	return server
}

// selfSigned is a certificate for name (its own CA), so git verifies the server as it
// would a real host's, through the tunnel the proxy opened.
func selfSigned(t *testing.T, name string) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		DNSNames:              []string{name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// bareRepo makes root/repo.git holding one commit whose README says content.
func bareRepo(t *testing.T, root, content string) {
	t.Helper()
	source := filepath.Join(root, "source")
	git := func(dir string, args ...string) {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=test", "-c", "user.email=test@example.test", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + root, "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.MkdirAll(source, 0o755); err != nil {
		t.Fatal(err)
	}
	git(source, "init", "-q")
	if err := os.WriteFile(filepath.Join(source, "README"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	git(source, "add", "README")
	git(source, "commit", "-q", "-m", "first")
	git(root, "clone", "-q", "--bare", source, filepath.Join(root, "repo.git"))
}

func portOf(server interface{ Addr() net.Addr }) string {
	_, port, _ := net.SplitHostPort(server.Addr().String())
	return port
}

// TestE2ENetAllowGitClone: the real git clones through --net-allow alone, over smart HTTP
// and over HTTPS (CONNECT, the certificate verified through the tunnel), from the host's
// own git http-backend on loopback; a clone from a server not on the list fails at once,
// naming --net-allow, without that server being asked anything. On every bwrap, as root
// and (make test-unprivileged) as nobody.
func TestE2ENetAllowGitClone(t *testing.T) {
	if _, err := os.Stat(gitHTTPBackend); err != nil {
		t.Fatalf("no %s (git, which scripts/ci-deps.sh installs, ships it): %v", gitHTTPBackend, err)
	}
	name := loopbackName(t)
	repos := livetest.TempDir(t)
	bareRepo(t, repos, "cloned through the allowlist\n")
	// The CA file is where the sandbox can read it: in the workdir, which is bound in.
	workdir := livetest.TempDir(t)
	caFile := filepath.Join(workdir, "ca.pem")
	plain := newGitServer(t, repos, "", "")
	secure := newGitServer(t, repos, name, caFile)
	stray := newGitServer(t, repos, "", "")
	allowed := []string{net.JoinHostPort(name, portOf(plain)), net.JoinHostPort(name, portOf(secure))}
	clone := func(scheme string, server *gitServer, into string) string {
		return "git clone -q " + scheme + "://" + net.JoinHostPort(name, portOf(server)) + "/repo.git /tmp/" + into + " && cat /tmp/" + into + "/README"
	}
	script := strings.Join([]string{
		clone("http", plain, "plain"),
		"git -c http.sslCAInfo=" + caFile + " " + strings.TrimPrefix(clone("https", secure, "secure"), "git "),
	}, " && ")
	for _, bwrap := range livetest.Bwraps(t) {
		t.Run(bwrap.Name, func(t *testing.T) {
			environ, _ := attackEnv(t, bwrap.Path)
			run := func(command ...string) outcome {
				args := []string{"run", "--workdir", workdir, "--env", "GIT_TERMINAL_PROMPT=0"}
				for _, host := range allowed {
					args = append(args, "--net-allow", host)
				}
				return binaryRun(t, environ, append(append(args, "--"), command...)...)
			}
			got := run("sh", "-c", script)
			if got.status != 0 || strings.Count(got.stdout, "cloned through the allowlist") != 2 {
				t.Fatalf("clones through --net-allow: status %d\nstdout %q\nstderr %s", got.status, got.stdout, got.stderr)
			}

			// The tool's own start, measured now on this loaded machine, comes on top of the
			// bound for the refusal.
			began := time.Now()
			if got := run("git", "--version"); got.status != 0 {
				t.Fatalf("git --version: %d %s", got.status, got.stderr)
			}
			ctx, cancel := context.WithTimeout(context.Background(), refusedBound+time.Since(began))
			defer cancel()
			args := []string{"run", "--workdir", workdir, "--env", "GIT_TERMINAL_PROMPT=0"}
			for _, host := range allowed {
				args = append(args, "--net-allow", host)
			}
			denied := net.JoinHostPort(name, portOf(stray))
			cmd := exec.CommandContext(ctx, builtBinary, append(args, "--", "git", "clone", "http://"+denied+"/repo.git", "/tmp/stray")...)
			cmd.Env = environ
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("git clone of a host not on the list still ran after %v: %s", refusedBound, stderr.String())
			}
			if err == nil || !strings.Contains(stderr.String(), "refused "+denied+": not in --net-allow") {
				t.Errorf("git clone of %s: %v\n%s\nwant a failure naming the host and --net-allow", denied, err, stderr.String())
			}
		})
	}
	// Smart protocol, both ways: the ref advertisement and the pack were asked of the
	// backend (a dumb-protocol clone would fetch objects/ paths instead).
	for _, server := range []*gitServer{plain, secure} {
		asked := server.asked()
		if !slices.ContainsFunc(asked, func(r string) bool { return strings.HasPrefix(r, "GET /repo.git/info/refs?service=git-upload-pack") }) ||
			!slices.Contains(asked, "POST /repo.git/git-upload-pack") {
			t.Errorf("%s was asked %v, want the smart protocol's info/refs and git-upload-pack", server.URL, asked)
		}
	}
	if asked := stray.asked(); len(asked) != 0 {
		t.Errorf("the server not on the list was asked %v", asked)
	}
}

// wheel is demo 1.0's wheel, the least pip accepts: the package and its dist-info.
func wheel(t *testing.T) []byte {
	var archive bytes.Buffer
	writer := zip.NewWriter(&archive)
	for name, body := range map[string]string{
		"demo/__init__.py":             "",
		"demo-1.0.dist-info/METADATA":  "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
		"demo-1.0.dist-info/WHEEL":     "Wheel-Version: 1.0\nGenerator: bwrapkit-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"demo-1.0.dist-info/RECORD":    "",
		"demo-1.0.dist-info/top_level": "demo\n",
	} {
		file, err := writer.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(file, body)
	}
	writer.Close()
	return archive.Bytes()
}

// npmTarball is demo-pkg 1.0.0's tarball: package/package.json.
func npmTarball(t *testing.T) []byte {
	var archive bytes.Buffer
	zipped := gzip.NewWriter(&archive)
	writer := tar.NewWriter(zipped)
	manifest := []byte(`{"name":"demo-pkg","version":"1.0.0","main":"index.js"}`)
	for name, body := range map[string][]byte{"package/package.json": manifest, "package/index.js": []byte("module.exports = 'demo-pkg from the registry'\n")} {
		writer.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(1700000000, 0)})
		writer.Write(body)
	}
	writer.Close()
	zipped.Close()
	return archive.Bytes()
}

// packageRegistry serves pip's simple index for demo and npm's registry for demo-pkg at
// http://name:port (the URL it returns, the one the sandbox uses), recording what it was
// asked.
func packageRegistry(t *testing.T, name string) (url string, asked func() []string) {
	whl, tgz := wheel(t), npmTarball(t)
	digest := sha512.Sum512(tgz)
	var mu sync.Mutex
	var requests []string
	var base string // set before the server starts
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, r.Method+" "+r.URL.Path)
		mu.Unlock()
		switch r.URL.Path {
		case "/simple/demo/":
			fmt.Fprintf(w, `<html><body><a href="%s/files/demo-1.0-py3-none-any.whl">demo-1.0-py3-none-any.whl</a></body></html>`, base)
		case "/files/demo-1.0-py3-none-any.whl":
			w.Write(whl)
		case "/demo-pkg":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":"demo-pkg","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"demo-pkg","version":"1.0.0","dist":{"tarball":"%s/demo-pkg/-/demo-pkg-1.0.0.tgz","integrity":"sha512-%s"}}}}`,
				base, base64.StdEncoding.EncodeToString(digest[:]))
		case "/demo-pkg/-/demo-pkg-1.0.0.tgz":
			w.Write(tgz)
		default:
			http.NotFound(w, r)
		}
	}))
	base = "http://" + net.JoinHostPort(name, portOf(server.Listener))
	server.Start()
	t.Cleanup(server.Close)
	return base, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(requests) }
}

// TestE2ENetAllowPipAndNpm: the real pip downloads a wheel and the real npm installs a
// package from a loopback registry on the list, through the proxy variables bwrapkit
// sets and nothing else (no proxy flag, no config file).
func TestE2ENetAllowPipAndNpm(t *testing.T) {
	name := loopbackName(t)
	for _, tool := range []string{"npm", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (scripts/ci-deps.sh installs it)", tool)
		}
	}
	base, asked := packageRegistry(t, name)
	script := strings.Join([]string{
		"python3 -m pip download --no-deps --no-cache-dir -d /tmp/wheels --index-url " + base + "/simple/ --trusted-host " + name + " demo >/dev/null && ls /tmp/wheels",
		"mkdir /tmp/app && cd /tmp/app && npm install --no-audit --no-fund --registry " + base + "/ demo-pkg >/dev/null && node -e \"console.log(require('demo-pkg'))\"",
	}, " && ")
	for _, bwrap := range livetest.Bwraps(t) {
		t.Run(bwrap.Name, func(t *testing.T) {
			environ, _ := attackEnv(t, bwrap.Path)
			got := binaryRun(t, environ, "run", "--workdir", livetest.TempDir(t), "--net-allow", strings.TrimPrefix(base, "http://"), "--", "sh", "-c", script)
			if got.status != 0 || !strings.Contains(got.stdout, "demo-1.0-py3-none-any.whl") || !strings.Contains(got.stdout, "demo-pkg from the registry") {
				t.Fatalf("pip and npm through --net-allow: status %d\nstdout %q\nstderr %s", got.status, got.stdout, got.stderr)
			}
		})
	}
	for _, want := range []string{"GET /simple/demo/", "GET /files/demo-1.0-py3-none-any.whl", "GET /demo-pkg", "GET /demo-pkg/-/demo-pkg-1.0.0.tgz"} {
		if !slices.Contains(asked(), want) {
			t.Errorf("the registry was not asked %s (asked %v)", want, asked())
		}
	}
}
