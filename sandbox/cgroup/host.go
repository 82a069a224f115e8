// Package cgroup gives one run a cgroup of its own where the host allows it: its
// processes are in it from bwrap's first instruction, its memory and tasks are bounded
// there, and the run ends with cgroup.kill and the cgroup's removal.
//
// Two layouts are supported. On a cgroup v2 host the run's cgroup is one directory under
// a subtree bwrapkit may write (root, or a delegated one: a systemd unit or scope with
// Delegate=yes, a user manager's user@.service). On a hybrid host (the memory and pids
// controllers on cgroup v1, the v2 hierarchy without controllers) root gets a v1 memory
// and a v1 pids cgroup, plus a v2 cgroup whose cgroup.kill ends the run.
package cgroup

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/bwrapkit/bwrapkit/internal/mountinfo"
)

// Mode is which kind of cgroup a run gets.
type Mode string

const (
	// V2 is one cgroup v2 directory with the memory and pids controllers.
	V2 Mode = "cgroup-v2"
	// V1 is root on a hybrid host: v1 memory and pids cgroups, and a v2 cgroup for
	// cgroup.kill (Linux 5.14 and later).
	V1 Mode = "cgroup-v1"
	// None is no cgroup: the keeper (and bwrapkit) alone hold the run's lifetime.
	None Mode = "none"
)

// Host is where the runs' cgroups go on this host, or why there are none.
type Host struct {
	Mode Mode
	// Unified is the v2 directory the run's cgroup is made in (both modes).
	Unified string
	// Memory and Pids are the v1 directories the run's v1 cgroups are made in (V1).
	Memory, Pids string
	// Why says, for None, what is missing; Remedy how to get a cgroup.
	Why, Remedy string
	// leaf is set when bwrapkit must first move itself into a cgroup of its own below
	// Unified (cgroup v2's rule: a cgroup that holds processes cannot give controllers to
	// its children), which it does only when it is alone in its cgroup.
	leaf string
}

// facts is what the decision reads of the host; Detect fills it from /proc and /sys.
type facts struct {
	euid      int
	release   string // uname's kernel release, "6.18.44-..."
	pid       int
	selfGroup string // /proc/self/cgroup
	mountinfo string // /proc/self/mountinfo
	// read returns a cgroup file's contents (cgroup.controllers, cgroup.subtree_control,
	// cgroup.procs); exists reports a file's presence (cgroup.kill); owner a file's uid.
	read     func(path string) (string, error)
	exists   func(path string) bool
	owner    func(path string) (int, error)
	writable func(dir string) bool // access(2) W_OK: a uid namespace's root may not be the host's
}

// mounts are the cgroup hierarchies of mountinfo: the v2 mount point, and per v1
// controller its mount point.
type mounts struct {
	unified string
	v1      map[string]string
}

func parseMounts(text string) mounts {
	m := mounts{v1: map[string]string{}}
	for line := range strings.SplitSeq(text, "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 3 || fields[3] != "/" {
			continue // a bind of a subtree (a container's view) is not a hierarchy's root
		}
		mountpoint := mountinfo.Unescape(fields[4])
		switch tail[0] {
		case "cgroup2":
			if m.unified == "" {
				m.unified = mountpoint
			}
		case "cgroup":
			for opt := range strings.SplitSeq(tail[2], ",") {
				if _, seen := m.v1[opt]; !seen {
					m.v1[opt] = mountpoint
				}
			}
		}
	}
	return m
}

// ownGroups parses /proc/self/cgroup: the v2 path ("0::PATH") and each v1 controller's.
func ownGroups(selfGroup string) (unified string, v1 map[string]string) {
	v1 = map[string]string{}
	for line := range strings.SplitSeq(selfGroup, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			unified = parts[2]
			continue
		}
		for controller := range strings.SplitSeq(parts[1], ",") {
			v1[controller] = parts[2]
		}
	}
	return unified, v1
}

const (
	remedyUser   = "run bwrapkit in a delegated cgroup: `systemd-run --user --scope -p Delegate=yes bwrapkit run ...` (a user manager needs a login, or `loginctl enable-linger`), or a service with Delegate=yes"
	remedyKernel = "Linux 5.14 or later has cgroup.kill"
)

// decide says where this host's runs get their cgroups, from facts alone.
func decide(f facts) Host {
	m := parseMounts(f.mountinfo)
	ownUnified, ownV1 := ownGroups(f.selfGroup)
	none := func(why, remedy string) Host { return Host{Mode: None, Why: why, Remedy: remedy} }
	if m.unified == "" || ownUnified == "" {
		return none("no cgroup v2 hierarchy is mounted", "mount cgroup2 (systemd does at boot), or use a kernel and init that do")
	}
	if !path.IsAbs(ownUnified) {
		return none(fmt.Sprintf("bwrapkit's cgroup %q cannot be used", ownUnified), remedyUser)
	}
	unified := path.Join(m.unified, ownUnified)
	// The root cgroup has no cgroup.kill of its own; its children have it from 5.14 on.
	if !f.exists(path.Join(unified, "cgroup.kill")) && (ownUnified != "/" || !atLeast(f.release, 5, 14)) {
		return none("the cgroup v2 hierarchy has no cgroup.kill (Linux before 5.14)", remedyKernel)
	}
	controllers, _ := f.read(path.Join(unified, "cgroup.controllers"))
	if has(controllers, "memory", "pids") {
		return decideV2(f, unified, ownUnified)
	}
	// A hybrid host: the controllers are on v1, and only root may make v1 cgroups (no
	// delegation exists there).
	memoryMount, pidsMount := m.v1["memory"], m.v1["pids"]
	if memoryMount == "" || pidsMount == "" {
		return none("neither cgroup v2 nor v1 offers the memory and pids controllers here", "enable the memory and pids controllers (cgroup_enable=memory on the kernel command line)")
	}
	host := Host{
		Mode:    V1,
		Unified: unified,
		Memory:  path.Join(memoryMount, ownV1["memory"]),
		Pids:    path.Join(pidsMount, ownV1["pids"]),
	}
	if f.euid != 0 || !f.writable(host.Unified) || !f.writable(host.Memory) || !f.writable(host.Pids) {
		return none("the memory and pids controllers are on cgroup v1 (a hybrid host), where only the host's root can make cgroups", "run as root, or boot with cgroup v2 alone (systemd.unified_cgroup_hierarchy=1) and "+remedyUser)
	}
	return host
}

// decideV2: the runs' cgroups go under bwrapkit's own, which must be writable (root, or
// delegated to this uid) and able to give memory and pids to its children.
func decideV2(f facts, unified, ownUnified string) Host {
	none := func(why string) Host { return Host{Mode: None, Why: why, Remedy: remedyUser} }
	if f.euid != 0 {
		for _, file := range []string{"", "cgroup.procs", "cgroup.subtree_control"} {
			if uid, err := f.owner(path.Join(unified, file)); err != nil || uid != f.euid {
				return none(fmt.Sprintf("bwrapkit's cgroup %s is not delegated to uid %d", ownUnified, f.euid))
			}
		}
	}
	if !f.writable(unified) {
		return none(fmt.Sprintf("bwrapkit's cgroup %s is not writable by uid %d", ownUnified, f.euid))
	}
	// Already in the leaf an earlier run of this process moved it into: the runs go
	// beside it, below the delegated cgroup, which gives them its controllers.
	if path.Base(unified) == leafName {
		parent := path.Dir(unified)
		if subtree, _ := f.read(path.Join(parent, "cgroup.subtree_control")); has(subtree, "memory", "pids") && f.writable(parent) {
			return Host{Mode: V2, Unified: parent}
		}
	}
	host := Host{Mode: V2, Unified: unified}
	subtree, _ := f.read(path.Join(unified, "cgroup.subtree_control"))
	if ownUnified == "/" || has(subtree, "memory", "pids") {
		return host // the root cgroup may hold processes and give controllers; or it is done
	}
	// cgroup v2 gives controllers to children only of a cgroup without processes. Moving
	// bwrapkit into a leaf of its own is safe only when it is alone: another process of
	// the cgroup (a shell, the caller's service) is not bwrapkit's to move.
	procs, err := f.read(path.Join(unified, "cgroup.procs"))
	if err != nil || strings.TrimSpace(procs) != fmt.Sprint(f.pid) {
		return none(fmt.Sprintf("bwrapkit's cgroup %s holds other processes, so it cannot give the memory and pids controllers to a run's cgroup", ownUnified))
	}
	host.leaf = path.Join(unified, leafName)
	return host
}

// atLeast reports whether a kernel release is major.minor or later.
func atLeast(release string, major, minor int) bool {
	var gotMajor, gotMinor int
	if _, err := fmt.Sscanf(release, "%d.%d", &gotMajor, &gotMinor); err != nil {
		return false
	}
	return gotMajor > major || (gotMajor == major && gotMinor >= minor)
}

// leafName is the cgroup bwrapkit moves itself into below a delegated cgroup v2.
const leafName = "bwrapkit"

func has(list string, want ...string) bool {
	fields := strings.Fields(list)
	for _, w := range want {
		if !slices.Contains(fields, w) {
			return false
		}
	}
	return true
}
