package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRefuseWritable(t *testing.T) {
	guard := reachGuard{Home: []string{"/home/ada"}, Trusted: []string{"/home/ada/.cache/bwrapkit/probe-v3", "/usr/local/lib/bwrapkit", "/opt/tools/bin/bwrap"}}
	cases := []struct {
		path string
		rule string // a word of the refusal; empty: allowed
	}{
		{"/", "itself"}, {"/var", "itself"}, {"/var/lib", "itself"}, {"/run", "itself"}, {"/tmp", "itself"},
		{"/var/tmp", "itself"}, {"/home", "itself"},
		{"/usr", "system directory /usr"}, {"/usr/bin", "system directory /usr"}, {"/usr/lib/x86_64-linux-gnu", "system directory /usr"},
		{"/etc/ssl", "system directory /etc"}, {"/etc/cron.d", "system directory /etc"}, {"/boot/efi", "/boot"},
		{"/proc/self", "/proc"}, {"/sys/fs", "/sys"}, {"/dev/shm", "/dev"}, {"/lib64", "/lib64"}, {"/libx32/x", "/libx32"},
		{"/home/ada", "home directory"}, {"/home/ada/.ssh", "configuration, keys"}, {"/home/ada/.config/git", "configuration, keys"},
		{"/home/ada/.local", "configuration, keys"}, {"/home/ada/src/.hidden-project", ""},
		{"/home/ada/.cache", "bwrapkit's own state"}, {"/home/ada/.cache/bwrapkit/probe-v3/x", "bwrapkit's own state"},
		{"/usr/local/lib/bwrapkit", "system directory /usr"}, {"/opt/tools", "bwrapkit's own state"}, {"/opt", "bwrapkit's own state"},
		{"/home/ada/src/app", ""}, {"/tmp/build", ""}, {"/var/lib/ci/build", ""}, {"/srv/work", ""}, {"/opt/other", ""},
		{"/usrlocal", ""}, {"/etcetera", ""},
	}
	for _, c := range cases {
		err := refuseWritable("workdir", c.path, c.path, guard)
		var policyErr *PolicyError
		switch {
		case c.rule == "" && err != nil:
			t.Errorf("%s: refused: %v", c.path, err)
		case c.rule != "" && (!errors.As(err, &policyErr) || !strings.Contains(err.Error(), c.rule)):
			t.Errorf("%s: %v, want a refusal naming %q", c.path, err, c.rule)
		}
	}
}

func TestRefuseReadOnly(t *testing.T) {
	for _, path := range []string{"/", "/proc", "/proc/1", "/proc/self/root", "/sys", "/dev", "/run", "/run/user/1000", "/run/docker.sock"} {
		if RefuseReadOnly("ro", path, path) == nil {
			t.Errorf("--ro %s accepted", path)
		}
	}
	for _, path := range []string{"/usr/local/go", "/opt/node", "/sys/fs/cgroup", "/dev/shm", "/etc/os-release"} {
		if err := RefuseReadOnly("ro", path, path); err != nil {
			t.Errorf("--ro %s: %v", path, err)
		}
	}
}

// TestNewPolicyRefusesAfterResolution: the rules apply to the resolved path, so a merged
// /usr's /bin is /usr/bin, and a link into /etc is /etc.
func TestNewPolicyRefusesAfterResolution(t *testing.T) {
	dir := t.TempDir()
	os.Symlink("/etc/ssl", filepath.Join(dir, "ssl"))
	for _, workdir := range []string{"/bin", "/sbin", "/lib", filepath.Join(dir, "ssl"), "/usr/../etc", "/var/lib"} {
		if _, err := os.Stat(workdir); err != nil {
			continue
		}
		_, err := NewPolicy(Request{Workdir: workdir}, nil)
		var policyErr *PolicyError
		if !errors.As(err, &policyErr) {
			t.Errorf("--workdir %s accepted: %v", workdir, err)
		}
	}
	home := t.TempDir()
	if _, err := NewPolicy(Request{Workdir: home}, []string{"HOME=" + home}); err == nil {
		t.Errorf("the caller's home was accepted as the workdir")
	}
	cache := filepath.Join(t.TempDir(), "project")
	os.MkdirAll(filepath.Join(cache, ".cache"), 0o755)
	if _, err := NewPolicy(Request{Workdir: cache}, []string{"XDG_CACHE_HOME=" + filepath.Join(cache, ".cache")}); err == nil {
		t.Errorf("a workdir enclosing the probe cache was accepted")
	}
	if _, err := NewPolicy(Request{Workdir: cache, Trusted: []string{filepath.Join(cache, "state", "bin", "bwrap")}}, nil); err == nil {
		t.Errorf("a workdir enclosing bwrapkit's home was accepted")
	}
}

func TestAncestorsBelow(t *testing.T) {
	if got := ancestorsBelow("/w", "/w/a/b/c"); !slices.Equal(got, []string{"/w/a", "/w/a/b"}) {
		t.Errorf("got %v", got)
	}
	if got := ancestorsBelow("/w", "/w/.git"); len(got) != 0 {
		t.Errorf("got %v", got)
	}
}
