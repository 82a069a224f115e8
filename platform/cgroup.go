package platform

import (
	"io/fs"
	"path"
	"strconv"
	"strings"
	"syscall"
)

// Cgroup is where this process sits in the cgroup tree and whether that part of the tree
// was delegated to the caller. bwrapkit never writes the host's cgroup tree; a delegated
// subtree (systemd's Delegate=yes, a user session's user@UID.service) is the only place a
// later cgroup limit (pids, memory) could go without root's say.
type Cgroup struct {
	Known     bool
	Version   int    // 2 for the unified hierarchy, 1 for v1 only
	Path      string // this process's cgroup (v2), e.g. /user.slice/user-1000.slice/...
	Delegated bool   // v2, and the directory, cgroup.procs and cgroup.subtree_control are the caller's (not root)
	Err       string // why it is unknown
}

// readCgroup decides from /proc/self/cgroup, the caller's uid (Uid: of /proc/self/status,
// effective) and the owners under /sys/fs/cgroup.
func readCgroup(r *reader, status map[string]string) Cgroup {
	data, ok := r.file("proc/self/cgroup")
	if !ok {
		return Cgroup{Err: "/proc/self/cgroup could not be read"}
	}
	view := Cgroup{Known: true, Version: 1}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if rest, found := strings.CutPrefix(line, "0::"); found {
			view.Version, view.Path = 2, path.Clean("/"+rest)
		}
	}
	uid, err := effectiveUID(status)
	if view.Version != 2 || err != nil || uid == 0 {
		return view
	}
	dir := path.Join("sys/fs/cgroup", strings.TrimPrefix(view.Path, "/"))
	view.Delegated = true
	for _, name := range []string{dir, path.Join(dir, "cgroup.procs"), path.Join(dir, "cgroup.subtree_control")} {
		info, err := fs.Stat(r.fsys, name)
		if err != nil {
			view.Delegated = false
			break
		}
		if stat, ok := info.Sys().(*syscall.Stat_t); !ok || int(stat.Uid) != uid {
			view.Delegated = false
		}
	}
	return view
}

// effectiveUID is the second field of status's Uid: line.
func effectiveUID(status map[string]string) (int, error) {
	fields := strings.Fields(status["Uid"])
	if len(fields) < 2 {
		return 0, strconv.ErrSyntax
	}
	return strconv.Atoi(fields[1])
}
