package cgroup

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/sandbox/limits"
)

func fixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// tree is a host's cgroup files for decide: contents by path, and owners by path.
type tree struct {
	files  map[string]string
	owners map[string]int
	// readOnly are the directories access(2) refuses to this uid (a user namespace's
	// root, whose host uid is not 0).
	readOnly map[string]bool
}

func (tr tree) facts(euid, pid int, selfGroup, mountinfo, release string) facts {
	return facts{
		euid: euid, pid: pid, selfGroup: selfGroup, mountinfo: mountinfo, release: release,
		read: func(p string) (string, error) {
			if v, ok := tr.files[p]; ok {
				return v, nil
			}
			return "", os.ErrNotExist
		},
		exists:   func(p string) bool { _, ok := tr.files[p]; return ok },
		writable: func(dir string) bool { return !tr.readOnly[dir] },
		owner: func(p string) (int, error) {
			if uid, ok := tr.owners[p]; ok {
				return uid, nil
			}
			return -1, os.ErrNotExist
		},
	}
}

func TestDecide(t *testing.T) {
	hybridMounts, hybridSelf := fixture(t, "hybrid-mountinfo"), fixture(t, "hybrid-cgroup")
	v2Mounts, userSelf := fixture(t, "v2-mountinfo"), fixture(t, "v2-user-cgroup")
	scope := "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope"
	delegated := func(procs, subtree string) tree {
		return tree{
			files: map[string]string{
				scope + "/cgroup.kill": "", scope + "/cgroup.controllers": "cpu memory pids",
				scope + "/cgroup.procs": procs, scope + "/cgroup.subtree_control": subtree,
			},
			owners: map[string]int{scope: 1000, scope + "/cgroup.procs": 1000, scope + "/cgroup.subtree_control": 1000},
		}
	}
	notDelegated := delegated("4242\n", "")
	notDelegated.owners = map[string]int{scope: 0, scope + "/cgroup.procs": 0, scope + "/cgroup.subtree_control": 0}
	rootV2 := tree{files: map[string]string{"/sys/fs/cgroup/cgroup.controllers": "cpu io memory pids", "/sys/fs/cgroup/cgroup.subtree_control": ""}}
	for _, tc := range []struct {
		name       string
		facts      facts
		mode       Mode
		unified    string
		memory     string
		leaf       string
		whySays    string
		remedySays string
	}{
		{
			name:    "hybrid, root: v1 memory and pids under its own, v2 for cgroup.kill",
			facts:   tree{}.facts(0, 1, hybridSelf, hybridMounts, "6.18.44"),
			mode:    V1,
			unified: "/sys/fs/cgroup/unified",
			memory:  "/sys/fs/cgroup/memory/process_api/281400aafd0ee256eb87719ae6c8c9c1",
		},
		{
			name:  "hybrid, root, before 5.14: no cgroup.kill",
			facts: tree{}.facts(0, 1, hybridSelf, hybridMounts, "5.10.0"), mode: None,
			whySays: "cgroup.kill", remedySays: "5.14",
		},
		{
			name:  "hybrid, root of a user namespace that does not map the host's root",
			facts: tree{readOnly: map[string]bool{"/sys/fs/cgroup/pids": true}}.facts(0, 1, hybridSelf, hybridMounts, "6.18.44"),
			mode:  None, whySays: "host's root",
		},
		{
			name:  "hybrid, a user: v1 has no delegation",
			facts: tree{}.facts(1000, 1, hybridSelf, hybridMounts, "6.18.44"), mode: None,
			whySays: "only the host's root", remedySays: "Delegate=yes",
		},
		{
			name:  "v2 only, root in the root cgroup",
			facts: rootV2.facts(0, 1, "0::/\n", v2Mounts, "6.1.0"), mode: V2, unified: "/sys/fs/cgroup",
		},
		{
			name:  "v2, a user alone in a delegated scope: it moves into a leaf",
			facts: delegated("4242\n", "").facts(1000, 4242, userSelf, v2Mounts, "6.1.0"),
			mode:  V2, unified: scope, leaf: scope + "/bwrapkit",
		},
		{
			name: "v2, a user already moved into its leaf by an earlier run: the runs go beside it",
			facts: func() facts {
				tr := delegated("", "memory pids")
				leaf := scope + "/bwrapkit"
				tr.files[leaf+"/cgroup.kill"], tr.files[leaf+"/cgroup.controllers"], tr.files[leaf+"/cgroup.procs"] = "", "memory pids", "4242\n"
				for _, p := range []string{leaf, leaf + "/cgroup.procs", leaf + "/cgroup.subtree_control"} {
					tr.owners[p] = 1000
				}
				return tr.facts(1000, 4242, "0::/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope/bwrapkit\n", v2Mounts, "6.1.0")
			}(),
			mode: V2, unified: scope,
		},
		{
			name:  "v2, a user whose scope already gives memory and pids",
			facts: delegated("", "memory pids").facts(1000, 4242, userSelf, v2Mounts, "6.1.0"),
			mode:  V2, unified: scope,
		},
		{
			name:  "v2, a user sharing the scope with a shell",
			facts: delegated("4000\n4242\n", "").facts(1000, 4242, userSelf, v2Mounts, "6.1.0"),
			mode:  None, whySays: "other processes", remedySays: "systemd-run --user --scope",
		},
		{
			name:  "v2, a user in a cgroup not delegated to it (a login session)",
			facts: notDelegated.facts(1000, 4242, userSelf, v2Mounts, "6.1.0"),
			mode:  None, whySays: "not delegated", remedySays: "loginctl enable-linger",
		},
		{
			name:  "no cgroup2 mount",
			facts: tree{}.facts(0, 1, "1:memory:/\n", "", "6.1.0"), mode: None, whySays: "no cgroup v2",
		},
	} {
		got := decide(tc.facts)
		if got.Mode != tc.mode || got.Unified != tc.unified || got.Memory != tc.memory || got.leaf != tc.leaf ||
			!strings.Contains(got.Why, tc.whySays) || !strings.Contains(got.Remedy, tc.remedySays) {
			t.Errorf("%s: %+v", tc.name, got)
		}
		if tc.mode == None && (got.Why == "" || got.Remedy == "") {
			t.Errorf("%s: no cgroup, but no why or remedy: %+v", tc.name, got)
		}
	}
}

func TestRunBounds(t *testing.T) {
	const gib = 1 << 30
	user, err := limits.Parse([]string{"memory=20G", "pids=100"}, limits.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		l        limits.Limits
		memTotal uint64
		want     Bounds
	}{
		{"defaults on a 24 GiB host", limits.Defaults(), 24 * gib, Bounds{Memory: 8 * gib, Pids: 4096}},
		{"defaults on an 8 GiB host: half of RAM", limits.Defaults(), 8 * gib, Bounds{Memory: 4 * gib, Pids: 4096}},
		{"defaults, RAM unknown", limits.Defaults(), 0, Bounds{Memory: 8 * gib, Pids: 4096}},
		{"the user's bounds as given", user, 8 * gib, Bounds{Memory: 20 * gib, Pids: 100}},
	} {
		if got := RunBounds(tc.l, tc.memTotal); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if got := parseMemTotal("MemTotal:       24684084 kB\nMemFree: 1 kB\n"); got != 24684084<<10 {
		t.Errorf("parseMemTotal = %d", got)
	}
}

// TestNeeded: without a cgroup, an explicit memory or pids bound refuses the run; the
// defaults do not.
func TestNeeded(t *testing.T) {
	none := Host{Mode: None, Why: "no delegation", Remedy: "Delegate=yes"}
	explicit, _ := limits.Parse([]string{"memory=1G", "pids=64"}, limits.Defaults())
	var needErr *NeededError
	if err := needed(none, explicit); !errors.As(err, &needErr) || !strings.Contains(err.Error(), "--limit memory=1G, --limit pids=64 needs a cgroup") || !strings.Contains(err.Error(), "Delegate=yes") {
		t.Errorf("explicit bounds without a cgroup: %v", err)
	}
	other, _ := limits.Parse([]string{"nproc=64"}, limits.Defaults())
	if err := needed(none, other); err != nil {
		t.Errorf("no cgroup bound asked: %v", err)
	}
	unlimited, _ := limits.Parse([]string{"memory=unlimited", "pids=unlimited"}, limits.Defaults())
	if err := needed(none, unlimited); err != nil || !Unbounded(unlimited) || Unbounded(explicit) || Unbounded(other) {
		t.Errorf("explicit unlimited bounds need no cgroup: %v", err)
	}
	if err := needed(Host{Mode: V1}, explicit); err != nil {
		t.Errorf("with a cgroup: %v", err)
	}
}

func TestPopulated(t *testing.T) {
	for events, want := range map[string]int{"populated 1\nfrozen 0\n": 1, "populated 0\nfrozen 0\n": 0, "frozen 0\n": -1} {
		if got := populated(events); got != want {
			t.Errorf("populated(%q) = %d, want %d", events, got, want)
		}
	}
}

func TestCounters(t *testing.T) {
	for _, tc := range []struct {
		read     func(string) uint64
		counters string
		want     uint64
	}{
		// cgroup v2 memory.events
		{oomKills, "low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n", 2},
		// cgroup v1 memory.oom_control: oom_kill_disable is not the count
		{oomKills, "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", 3},
		{oomKills, "oom_kill_disable 1\nunder_oom 0\n", 0},
		{oomKills, "", 0},
		// cgroup v2 cpu.stat: user_usec is not the usage
		{usageMicros, "usage_usec 6050\nuser_usec 6050\nsystem_usec 0\n", 6050},
		{usageMicros, "user_usec 12\nsystem_usec 3\n", 0},
		{usageMicros, "", 0},
	} {
		if got := tc.read(tc.counters); got != tc.want {
			t.Errorf("%q: %d, want %d", tc.counters, got, tc.want)
		}
	}
}
