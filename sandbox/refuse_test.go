package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRefuseWritable(t *testing.T) {
	guard := Guard{Home: []string{"/home/ada"}, Trusted: []string{"/home/ada/.cache/bwrapkit/probe-v3", "/usr/local/lib/bwrapkit", "/opt/tools/bin/bwrap"}}
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
		err := RefuseWritable("--workdir", c.path, c.path, guard)
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
		if RefuseReadOnly("--ro", path, path) == nil {
			t.Errorf("--ro %s accepted", path)
		}
	}
	for _, path := range []string{"/usr/local/go", "/opt/node", "/sys/fs/cgroup", "/dev/shm", "/etc/os-release"} {
		if err := RefuseReadOnly("--ro", path, path); err != nil {
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

// TestIndexGitlinksOfRealIndexes: gitlinks read from indexes real git wrote, in every
// format version it writes.
func TestIndexGitlinksOfRealIndexes(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	for _, version := range []string{"2", "3", "4"} {
		t.Run("v"+version, func(t *testing.T) {
			repo := t.TempDir()
			git := func(args ...string) {
				cmd := exec.Command(gitPath, append([]string{"-C", repo}, args...)...)
				cmd.Env = []string{"HOME=" + repo, "GIT_CONFIG_NOSYSTEM=1"}
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
			git("init", "-q")
			os.WriteFile(filepath.Join(repo, "file"), []byte("x"), 0o644)
			git("add", "file")
			for _, sub := range []string{"libs/a", "libs/ab", "vendor/deep/module"} {
				git("update-index", "--add", "--cacheinfo", "160000,1111111111111111111111111111111111111111,"+sub)
			}
			if version == "3" {
				git("update-index", "--index-version", "3", "--skip-worktree", "file")
			} else {
				git("update-index", "--index-version", version)
			}
			got, err := indexGitlinks(filepath.Join(repo, ".git", "index"))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, []string{"libs/a", "libs/ab", "vendor/deep/module"}) {
				t.Errorf("gitlinks %v", got)
			}
		})
	}
}

func TestParseIndexGitlinksRefusesDamage(t *testing.T) {
	for _, data := range [][]byte{nil, []byte("DIRC"), []byte("DIRC\x00\x00\x00\x09\x00\x00\x00\x00"), []byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x05")} {
		if _, err := parseIndexGitlinks(data); err == nil {
			t.Errorf("%q parsed", data)
		}
	}
}

// FuzzParseIndexGitlinks: no index, however damaged, makes the parser panic or hang.
func FuzzParseIndexGitlinks(f *testing.F) {
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, data []byte) { parseIndexGitlinks(data) })
}
