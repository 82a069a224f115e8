package sandbox

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bwrapkit/bwrapkit/sandbox/limits"
)

// A run is resolved once. resolve reads the policy, as Run completed it (the bwrap's
// features, the run's attachments, a transactional run's layer), and turns it into a
// plan: the binds in mount order, the links to recreate, the environment, the start
// directory and the bounds. Argv building (build), the gate's expectations and the launch
// read the plan and never go back to the policy, as runc's specconv turns a spec into a
// config once and libcontainer only consumes it. check, which every policy passes first,
// is here too: it is what resolve may assume.

// resolved is one run, planned: what build, the gate and the launch read.
type resolved struct {
	workdir       string
	network       bool
	features      Features
	host          Host
	limits        limits.Limits
	ephemeralHome bool // HOME is EphemeralHome, made in the private /tmp
	binds         []bind
	links         []Link // the links to recreate: those no bind shows the host's own of
	cacheArgs     []string
	netProxy      NetProxy
	env           []string
	startDir      string
	overlay       overlayDirs
	// lookInside finds a command as the sandbox sees the host's files: after a run whose
	// stderr went straight to the caller, it tells a 126 from a 127.
	lookInside func(name string) (path string, found bool)
}

// resolve turns a checked policy into its plan.
func resolve(policy Policy) resolved {
	run := resolved{
		workdir: policy.Workdir, network: policy.Network, features: policy.Features, host: policy.Host,
		limits: policy.Limits, ephemeralHome: policy.EphemeralHome && policy.Home == "",
		binds: binds(policy), cacheArgs: policy.cacheArgs(), netProxy: policy.NetProxy,
		env: policy.Environment(), startDir: policy.StartDir(), overlay: policy.overlay,
		lookInside: func(name string) (string, bool) { return lookInside(policy, name) },
	}
	for _, link := range policy.Links {
		if !policy.visible(link.Path) { // else a bind shows the host's own link there
			run.links = append(run.links, link)
		}
	}
	return run
}

// overlayOption marks the workdir's bind in the transactional mode.
const overlayOption = "--overlay"

// overlayDirs are a transactional run's upper layer and overlayfs work directory.
type overlayDirs struct{ upper, work string }

type bind struct {
	option string
	path   string
}

// binds orders the policy's binds parent before child, so a read-only path inside
// the workdir lands on top of it, and the workdir on top of a read-only parent. Every
// writable directory between the workdir and a protected path is bound onto itself: a
// mount point cannot be renamed or removed, so the command cannot move the protected
// path away (rename its parent) and put its own file at the protected name.
func binds(policy Policy) []bind {
	all := make([]bind, 0, 2+len(policy.ReadOnly)+2*len(policy.Protect))
	if policy.overlay.upper != "" {
		all = append(all, bind{overlayOption, policy.Workdir})
	} else {
		all = append(all, bind{"--bind", policy.Workdir})
	}
	if policy.Home != "" {
		all = append(all, bind{"--bind", policy.Home})
	}
	for _, path := range policy.ReadWrite {
		all = append(all, bind{"--bind", path})
	}
	for _, path := range policy.ReadOnly {
		all = append(all, bind{"--ro-bind", path})
	}
	for _, path := range policy.Protect {
		all = append(all, bind{"--ro-bind", path})
	}
	// An --ro path inside the workdir is pinned like a protected one: otherwise the
	// command could rename its parent away and put its own files at the name.
	pinned := slices.Clone(policy.Protect)
	for _, path := range policy.ReadOnly {
		if within(policy.Workdir, path) && path != policy.Workdir {
			pinned = append(pinned, path)
		}
	}
	if policy.overlay.upper != "" {
		// Over an overlay nothing is pinned: a rename inside changes only the upper
		// layer, and landing refuses any change that touches or replaces a protected path.
		pinned = nil
	}
	slices.SortStableFunc(all, func(a, b bind) int { return depth(a.path) - depth(b.path) })
	for _, ancestor := range protectAncestors(policy.Workdir, pinned, all) {
		all = append(all, bind{"--bind", ancestor})
	}
	slices.SortStableFunc(all, func(a, b bind) int { return depth(a.path) - depth(b.path) })
	return all
}

// protectAncestors are the directories strictly between workdir and each protected path
// that are still writable inside, each once: those whose last bind in mount order (binds,
// parent before child) is not read-only. A read-only path that holds the workdir lies
// under the workdir's own writable bind, and an --rw inside an --ro on top of it: such a
// path covers nothing of the workdir (it once did, and with --ro of the project's parent
// a command renamed a submodule's directory away and planted its own .git there).
func protectAncestors(workdir string, protect []string, binds []bind) []string {
	var ancestors []string
	for _, path := range protect {
		for _, ancestor := range ancestorsBelow(workdir, path) {
			last := ""
			for _, b := range binds {
				if within(b.path, ancestor) {
					last = b.option
				}
			}
			if last != "--ro-bind" && !slices.Contains(ancestors, ancestor) {
				ancestors = append(ancestors, ancestor)
			}
		}
	}
	return ancestors
}

func depth(path string) int {
	if path == "/" {
		return 0
	}
	return strings.Count(path, "/")
}

// Environment is the command's whole environment, in the order it is set (later wins):
// the one list the doctor's env-clear verdict checks against.
func (policy Policy) Environment() []string {
	home := policy.Home
	switch {
	case home != "":
	case policy.EphemeralHome:
		home = EphemeralHome
	default:
		home = policy.Workdir
	}
	env := []string{"PATH=" + policy.InsidePath(), "HOME=" + home, "TMPDIR=/tmp"}
	if policy.User != "" {
		env = append(env, "USER="+policy.User, "LOGNAME="+policy.User)
	}
	env = append(env, policy.Host.Env...)
	env = append(env, policy.NetProxy.env()...)
	env = append(env, policy.cacheEnv()...)
	return append(env, policy.Env...)
}

// InsidePath is the command's PATH: each --path first, in order, then DefaultPath.
func (policy Policy) InsidePath() string {
	return strings.Join(append(slices.Clone(policy.Path), DefaultPath), ":")
}

// StartDir is the command's working directory inside.
func (policy Policy) StartDir() string {
	if policy.Cwd != "" {
		return policy.Cwd
	}
	return policy.Workdir
}

func check(bwrapPath string, policy Policy, cmd []string) error {
	if len(cmd) == 0 || cmd[0] == "" {
		return errors.New("no command to run")
	}
	if !isCleanAbs(bwrapPath) {
		return &PolicyError{"bwrap", bwrapPath, "must be an absolute path"}
	}
	if !isCleanAbs(policy.Workdir) {
		return &PolicyError{"workdir", policy.Workdir, "must be an absolute, resolved path"}
	}
	if err := refuseWritable("workdir", policy.Workdir, policy.Workdir, reachGuard{}); err != nil {
		return err
	}
	for _, path := range policy.ReadOnly {
		if !isCleanAbs(path) {
			return &PolicyError{"ro", path, "must be an absolute, resolved path"}
		}
		if err := RefuseReadOnly("ro", path, path); err != nil {
			return err
		}
		if path == policy.Workdir {
			return &PolicyError{"ro", path, "is the workdir, which is bound read-write; make parts of it read-only with --protect PATH instead"}
		}
	}
	for _, path := range policy.ReadWrite {
		if !isCleanAbs(path) {
			return &PolicyError{"rw", path, "must be an absolute, resolved path"}
		}
		if err := refuseWritable("rw", path, path, reachGuard{}); err != nil {
			return err
		}
		if within(policy.Workdir, path) || within(path, policy.Workdir) {
			return &PolicyError{"rw", path, "must be apart from the workdir"}
		}
	}
	if policy.Home != "" {
		if !isCleanAbs(policy.Home) {
			return &PolicyError{"home_dir", policy.Home, "must be an absolute, resolved path"}
		}
		if err := checkHome("home_dir", policy.Home, policy.Home, policy.Workdir, reachGuard{}); err != nil {
			return err
		}
	}
	if policy.Cwd != "" && (!isCleanAbs(policy.Cwd) || !within(policy.Workdir, policy.Cwd)) {
		return &PolicyError{"cwd", policy.Cwd, "must be a resolved path inside the workdir"}
	}
	for _, dir := range policy.Path {
		if !filepath.IsAbs(dir) || strings.Contains(dir, ":") {
			return &PolicyError{"path", dir, "must be an absolute path without ':'"}
		}
	}
	for _, link := range policy.Links {
		if !isCleanAbs(link.Path) || !isCleanAbs(link.Target) {
			return &PolicyError{"ro", link.Path, "a link must be an absolute, clean path to an absolute, clean target"}
		}
	}
	switch policy.Git {
	case "", GitReadOnly, GitCommit:
	default:
		return &PolicyError{"git", string(policy.Git), "must be readonly or commit"}
	}
	for _, path := range policy.Protect {
		if !isCleanAbs(path) || !within(policy.Workdir, path) || path == policy.Workdir {
			return &PolicyError{"protect", path, "must be a resolved path inside the workdir"}
		}
	}
	for _, entry := range policy.Env {
		if err := checkEnvEntry(entry); err != nil {
			return err
		}
	}
	// The cache layers and the proxy are Run's attachments, checked in attachments.go.
	return nil
}

func isCleanAbs(path string) bool {
	return filepath.IsAbs(path) && filepath.Clean(path) == path
}
