package sandbox

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunChecksItsAttachments: the cache layers and the proxy a caller hands Run (which
// NewPolicy cannot seal) are refused where NewPolicy would refuse the same paths.
func TestRunChecksItsAttachments(t *testing.T) {
	home := filepath.Join(t.TempDir(), "proj-home")
	policy := Policy{Workdir: "/src/app", Home: home}
	layers := home + CacheLayersSuffix
	cacheDir := t.TempDir()
	ok := CacheLayer{Name: "npm", Lower: cacheDir, Upper: layers + "/npm/upper", Work: layers + "/npm/work", Dest: home + "/.npm"}
	if err := checkCaches(policy, []CacheLayer{ok}); err != nil {
		t.Fatalf("an honest cache layer: %v", err)
	}
	for name, layer := range map[string]CacheLayer{
		"/etc shown writable at its own path": {Name: "x", Lower: "/etc", Upper: ok.Upper, Work: ok.Work, Dest: "/etc"},
		"a lower layer under /usr":            {Name: "x", Lower: "/usr/share", Upper: ok.Upper, Work: ok.Work, Dest: home + "/x"},
		"/home itself":                        {Name: "x", Lower: "/home", Upper: ok.Upper, Work: ok.Work, Dest: home + "/x"},
		"an upper layer outside the layers":   {Name: "x", Lower: cacheDir, Upper: "/var/lib/evil", Work: ok.Work, Dest: home + "/x"},
		"/proc":                               {Name: "x", Lower: "/proc", Upper: ok.Upper, Work: ok.Work, Dest: home + "/x"},
	} {
		var policyErr *PolicyError
		if err := checkCaches(policy, []CacheLayer{layer}); !errors.As(err, &policyErr) {
			t.Errorf("%s: accepted (%v)", name, err)
		}
	}

	// Home dot-entries, as --rw refuses them, but for the tool caches that live there.
	caller := t.TempDir()
	t.Setenv("HOME", caller)
	t.Setenv("XDG_CACHE_HOME", "")
	for _, dir := range []string{".ssh", ".config/git", ".cache/go-build", ".cache/bwrapkit/home", ".npm/_cacache", ".gnupg"} {
		if err := os.MkdirAll(filepath.Join(caller, dir), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for dir, refused := range map[string]bool{".ssh": true, ".config/git": true, ".gnupg": true, ".cache": true, ".cache/bwrapkit/home": true, ".cache/go-build": false, ".npm": false, ".npm/_cacache": false} {
		layer := CacheLayer{Name: "x", Lower: filepath.Join(caller, dir), Upper: ok.Upper, Work: ok.Work, Dest: home + "/x"}
		err := checkCaches(policy, []CacheLayer{layer})
		var policyErr *PolicyError
		if refused && (!errors.As(err, &policyErr) || !strings.Contains(err.Error(), "tool cache")) {
			t.Errorf("~/%s as a cache's lower layer: %v, want it refused as a home dot-entry", dir, err)
		}
		if !refused && err != nil {
			t.Errorf("~/%s, a tool cache: %v", dir, err)
		}
	}
	// Run itself refuses it, before anything runs.
	sealed, err := NewPolicy(Request{Workdir: t.TempDir()}, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	ssh := CacheLayer{Name: "x", Lower: filepath.Join(caller, ".ssh"), Upper: sealed.Home + CacheLayersSuffix + "/x/upper", Work: sealed.Home + CacheLayersSuffix + "/x/work", Dest: sealed.Home + "/x"}
	var unavailable *UnavailableError
	if _, err := Run(context.Background(), sealed, []string{"/bin/true"}, Options{Bwrap: "/usr/bin/bwrap", Caches: []CacheLayer{ssh}}); !errors.As(err, &unavailable) || unavailable.Reason != ReasonInvalidPolicy || !strings.Contains(err.Error(), ".ssh") {
		t.Errorf("Run with ~/.ssh as a cache's lower layer: %v", err)
	}

	// The proxy: only a socket in a private directory of the caller's.
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(private, "proxy.sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	if err := checkNetProxy(policy, NetProxy{Socket: socket}, nil); err != nil {
		t.Errorf("the proxy's own socket: %v", err)
	}
	if err := os.Chmod(private, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkNetProxy(policy, NetProxy{Socket: socket}, nil); err == nil {
		t.Error("a socket in a directory others can enter was accepted")
	}
	if err := checkNetProxy(policy, NetProxy{Socket: "/run/docker.sock"}, nil); err == nil {
		t.Error("a socket under /run was accepted")
	}
	if err := checkNetProxy(Policy{Workdir: "/src/app", Network: true}, NetProxy{Socket: socket}, nil); err == nil {
		t.Error("a proxy was added to a run with the host network")
	}

	// A joined proxy: Joined and a joiner together, nothing else.
	var joiner joinerFunc = func(*os.File) error { return nil }
	if err := checkNetProxy(policy, NetProxy{Joined: true}, joiner); err != nil {
		t.Errorf("a joined proxy: %v", err)
	}
	for name, bad := range map[string]struct {
		policy Policy
		proxy  NetProxy
		joiner Joiner
	}{
		"Joined without a joiner":      {policy, NetProxy{Joined: true}, nil},
		"a joiner without Joined":      {policy, NetProxy{}, joiner},
		"joined and a socket too":      {policy, NetProxy{Joined: true, Socket: socket}, joiner},
		"joined with the host network": {Policy{Workdir: "/src/app", Network: true}, NetProxy{Joined: true}, joiner},
	} {
		if err := checkNetProxy(bad.policy, bad.proxy, bad.joiner); err == nil {
			t.Errorf("%s was accepted", name)
		}
	}
}

// joinerFunc is a Joiner from a function, for the checks above (never called there).
type joinerFunc func(*os.File) error

func (f joinerFunc) ServeNamespace(netns *os.File) error { return f(netns) }
