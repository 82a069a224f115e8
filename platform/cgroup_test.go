package platform

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

func TestCgroupVersionAndPath(t *testing.T) {
	cases := []struct {
		name, cgroup string
		want         Cgroup
	}{
		{"v2", "0::/user.slice/user-1000.slice/session-3.scope\n", Cgroup{Known: true, Version: 2, Path: "/user.slice/user-1000.slice/session-3.scope"}},
		{"hybrid", "12:pids:/user.slice\n0::/user.slice/x\n", Cgroup{Known: true, Version: 2, Path: "/user.slice/x"}},
		{"v1 only", "12:pids:/user.slice\n1:name=systemd:/user.slice\n", Cgroup{Known: true, Version: 1}},
		{"root of a namespace", "0::/\n", Cgroup{Known: true, Version: 2, Path: "/"}},
	}
	for _, c := range cases {
		fsys := fstest.MapFS{"proc/self/cgroup": {Data: []byte(c.cgroup)}}
		if got := readCgroup(&reader{fsys: fsys}, map[string]string{"Uid": "1000 1000 1000 1000"}); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	if got := readCgroup(&reader{fsys: fstest.MapFS{}}, nil); got.Known || got.Err == "" {
		t.Errorf("no /proc/self/cgroup: %+v, want unknown with the reason", got)
	}
}

// TestCgroupDelegation: delegated means the cgroup's directory, cgroup.procs and
// cgroup.subtree_control belong to the caller, as systemd's Delegate=yes leaves them.
func TestCgroupDelegation(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown the fixture to another uid")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "sys/fs/cgroup/user.slice/user-4242.slice/user@4242.service")
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(filepath.Join(root, "proc/self"), 0o755)
	os.WriteFile(filepath.Join(root, "proc/self/cgroup"), []byte("0::/user.slice/user-4242.slice/user@4242.service\n"), 0o644)
	for _, name := range []string{"cgroup.procs", "cgroup.subtree_control"} {
		os.WriteFile(filepath.Join(dir, name), nil, 0o644)
	}
	status := map[string]string{"Uid": "4242 4242 4242 4242"}
	if got := readCgroup(&reader{fsys: os.DirFS(root)}, status); got.Delegated {
		t.Errorf("root-owned cgroup files counted as delegated: %+v", got)
	}
	for _, path := range []string{dir, filepath.Join(dir, "cgroup.procs"), filepath.Join(dir, "cgroup.subtree_control")} {
		if err := os.Chown(path, 4242, 4242); err != nil {
			t.Fatal(err)
		}
	}
	if got := readCgroup(&reader{fsys: os.DirFS(root)}, status); !got.Delegated {
		t.Errorf("a cgroup owned by the caller is not seen as delegated: %+v", got)
	}
	if got := readCgroup(&reader{fsys: os.DirFS(root)}, map[string]string{"Uid": "0 0 0 0"}); got.Delegated {
		t.Errorf("root never counts as delegated (it may write the whole tree): %+v", got)
	}
}
