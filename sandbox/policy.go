// Package sandbox turns a Policy into a bwrap argv (pure) and runs a command behind it,
// failing closed: if the boundary cannot be proven built, the command never counts as run.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/bwrapkit/bwrapkit/home"
	"github.com/bwrapkit/bwrapkit/internal/environ"
	"github.com/bwrapkit/bwrapkit/internal/pathtree"
	"github.com/bwrapkit/bwrapkit/sandbox/gitmeta"
	"github.com/bwrapkit/bwrapkit/sandbox/limits"
	"golang.org/x/sys/unix"
)

// Policy is what a caller asks of the sandbox, as NewPolicy resolved it. Argv takes any
// Policy (it checks the paths again and refuses what is unsafe); Run takes only one that
// NewPolicy returned and nothing changed since but Features (see seal.go).
type Policy struct {
	// Workdir is the project's read-write bind, at its real (symlink-resolved) path.
	Workdir string
	// ReadOnly are extra read-only binds at the same path (a toolchain, say).
	ReadOnly []string
	// ReadWrite are extra read-write binds at the same path (--rw), refused like Workdir.
	ReadWrite []string
	// Home is the command's HOME, bound read-write; empty means HOME is the Workdir,
	// or EphemeralHome when that is set.
	Home string
	// EphemeralHome: HOME is an empty directory in the sandbox's private /tmp, made for
	// each run (no cache directory on the host could hold the project's).
	EphemeralHome bool
	// HomeFallback says why HOME is ephemeral when a project HOME was wanted and could
	// not be made (no cache directory, a read-only or full one): a caller should tell
	// the user, whose tools' caches will not survive the run.
	HomeFallback string
	// Path are directories put before DefaultPath in the command's PATH, in order.
	Path []string
	// Links are symlinks recreated inside, so an --ro or --path given as a link is
	// found at the link's name too.
	Links []Link
	// Cwd is where the command starts, inside Workdir; empty means Workdir.
	Cwd string
	// User is the caller's name, set as USER and LOGNAME; empty sets neither.
	User string
	// Git is how the workdir's git metadata is bound: GitReadOnly (the zero value) or
	// GitCommit.
	Git GitMode
	// Protect are paths inside Workdir re-bound read-only; NewPolicy adds .git.
	Protect []string
	// Network keeps the host network namespace.
	Network bool
	// NetProxy and Caches are set by Run from Options (a run's attachments, not part of
	// what NewPolicy resolves and seals): zero in every policy NewPolicy returns.
	NetProxy NetProxy
	Caches   []CacheLayer
	// Env are NAME=VALUE entries set inside, after the defaults.
	Env []string
	// Limits are the command's resource bounds; the zero value is the defaults.
	Limits limits.Limits
	// Host is the host's layout the argv mirrors; see scanHost.
	Host Host
	// WorkdirMode is the mode asked for: WorkdirAuto (the zero value: transactional
	// where it can be built, else direct with a warning), transactional or direct.
	WorkdirMode WorkdirMode
	// LayerRoot is the private directory a transactional run's layers live in (one per
	// project, outside it); "" when none could be made (then only direct is possible).
	LayerRoot string
	// PolicyBase is the record, in bwrapkit's private state for this project, of the
	// commit HEAD was at before a --git commit run (see TrustPolicyFile); "" with no
	// cache directory.
	PolicyBase string
	// NoLayer says why LayerRoot is empty.
	NoLayer string
	// Guarded are paths inside the workdir that host tools run by themselves (the
	// policy file in use, bwrapkit's own binary, a hooks directory in the work tree): a
	// transactional run never lands a change to them; a direct run refuses the workdir.
	Guarded []string
	// SelfInside is bwrapkit's own binary when it lies inside the workdir (guarded
	// transactionally; a direct run refuses the workdir).
	SelfInside string
	// KeepAbandoned keeps the layers of runs whose bwrapkit died as quarantines instead
	// of removing them.
	KeepAbandoned bool
	// LandMaxEntries: see Request.LandMaxEntries.
	LandMaxEntries int
	// overlay is set by Run for a transactional launch.
	overlay overlayDirs
	// Features are the bwrap binary's options; see Probe. Zero means "not probed":
	// Argv leaves out what it cannot know is supported. Run ignores them and probes the
	// binary it is given itself, so a stale or forged value cannot drop a hardening.
	Features Features

	// seal is NewPolicy's mark over every other field; Run refuses a policy without it,
	// or one changed since (see seal.go).
	seal string
}

// PolicyError is a policy the sandbox refuses to build: bad input, not a host failure.
type PolicyError struct {
	Field  string
	Value  string
	Reason string
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Field, e.Value, e.Reason)
}

// Link is one symlink made inside the sandbox: Path leads to Target.
type Link struct {
	Path   string
	Target string
}

// Request is a policy as a user states it: relative paths, symlinks and all. Its JSON
// form is the policy file's (see PolicyFile).
type Request struct {
	Workdir   string   `json:"workdir,omitempty"`   // default: the current directory
	ReadOnly  []string `json:"ro,omitempty"`        // absolute or relative to the current directory
	ReadWrite []string `json:"rw,omitempty"`        // the same, bound read-write
	Path      []string `json:"path,omitempty"`      // directories put first on the inside PATH
	Protect   []string `json:"protect,omitempty"`   // relative to Workdir
	Network   bool     `json:"net,omitempty"`       //
	NetAllow  []string `json:"net_allow,omitempty"` // HOST[:PORT] or *.DOMAIN[:PORT], reached through the proxy
	Cache     string   `json:"cache,omitempty"`     // host (default): the caller's tool caches as lower layers; none
	Env       []string `json:"env,omitempty"`       // NAME=VALUE
	PassEnv   []string `json:"pass_env,omitempty"`  // names copied from the caller's environment when set
	Limits    []string `json:"limit,omitempty"`     // NAME=VALUE bounds (see package limits), on top of the defaults
	HomeDir   string   `json:"home_dir,omitempty"`  // default: the project's own HOME (see home.go)
	Git       string   `json:"git,omitempty"`       // readonly (default) or commit
	Cwd       string   `json:"cwd,omitempty"`       // relative to Workdir; default: the current directory when inside it
	// Preview resolves without changing the host (the project HOME is not made): the
	// policy is for showing (--print-policy), and Run refuses it.
	Preview bool `json:"-"`
	// WorkdirMode is transactional or direct; empty is the default (see WorkdirMode).
	WorkdirMode string `json:"workdir_mode,omitempty"`
	// Self is bwrapkit's own binary, Helper the path of bwrapkit-helper beside it (its
	// runs' keeper and bridge when one is there and fit; guarded whether or not, so a
	// command cannot plant one), and PolicyFile the policy file in use: trusted state
	// outside the workdir; inside it (a checkout's ./bwrapkit), guarded instead.
	Self       string `json:"-"`
	Helper     string `json:"-"`
	PolicyFile string `json:"-"`
	// KeepAbandoned: see Policy.KeepAbandoned.
	KeepAbandoned bool `json:"-"`
	// LandMaxEntries bounds the entries a transactional run's layer may hold (0: the
	// default, 250,000); more lands nothing.
	LandMaxEntries int `json:"-"`
	// Trusted is bwrapkit's own state the sandbox must never be able to write: its home
	// (with the managed bwrap) and the bwrap in use. The probe cache is added by NewPolicy.
	Trusted []string `json:"-"`
}

// NewPolicy resolves a Request against the file system and the caller's environment
// (env, as os.Environ returns it) into a Policy: the only place where sandbox
// policy touches the host. Every refusal is decided on the fully resolved path.
func NewPolicy(request Request, env []string) (Policy, error) {
	if env == nil {
		env = os.Environ()
	}
	getenv := environ.Getenv(env)
	cacheDirs := DefaultProber(env).CacheDirs // once: each candidate costs a stat or two
	mode, err := ParseWorkdirMode(request.WorkdirMode)
	if err != nil {
		return Policy{}, err
	}
	workdir, err := resolveDir("workdir", request.Workdir)
	if err != nil {
		return Policy{}, err
	}
	// bwrapkit's binary and the policy file in use are trusted state: in a checkout run
	// transactionally, guarded inside the workdir instead (no change to them lands).
	trusted, guarded, selfInside := slices.Clone(request.Trusted), []string(nil), ""
	for _, path := range []string{request.Self, request.Helper, request.PolicyFile} {
		if path == "" {
			continue
		}
		program := path == request.Self || path == request.Helper
		if real := resolveExisting(absolute(path)); mode != WorkdirDirect && within(workdir, real) && real != workdir {
			guarded = append(guarded, real)
			if path == request.Self {
				selfInside = real
			}
		} else if program {
			trusted = append(trusted, path)
		}
	}
	guard := reachGuard{Home: callerHomes(getenv), Trusted: trustedState(trusted, cacheDirs), Scratch: scratchDirs(cacheDirs)}
	// A workdir or --rw path may not reach any project's HOME or layers either.
	projectGuard := reachGuard{Home: guard.Home, Trusted: append(slices.Clone(guard.Trusted), resolveAll(append(home.Roots(env), layerRoots(env)...))...), Scratch: guard.Scratch}
	if request.Workdir != "" && request.Workdir != "." {
		if err := refusePlantedLinks("workdir", request.Workdir, guard); err != nil {
			return Policy{}, err
		}
	}
	given := request.Workdir
	if given == "" || given == "." {
		given = "(the current directory)"
	}
	if err := refuseWritable("workdir", given, workdir, projectGuard); err != nil {
		return Policy{}, err
	}
	if err := checkAccess("workdir", given, workdir); err != nil {
		return Policy{}, err
	}
	if err := refuseSharedWorkdir(given, workdir); err != nil {
		return Policy{}, err
	}
	git, err := ParseGitMode(request.Git)
	if err != nil {
		return Policy{}, err
	}
	bounds, err := limits.Parse(request.Limits, limits.Defaults())
	if err != nil {
		var limitErr *limits.Error
		if errors.As(err, &limitErr) {
			return Policy{}, &PolicyError{"limit", limitErr.Spec, limitErr.Reason + " (names: " + strings.Join(limitErr.Names, ", ") + ")"}
		}
		return Policy{}, err
	}
	// Each --ro, --rw and --path is resolved more than once below (its bind, its link's
	// parent, the project HOME's key), and most share their parents: one answer each.
	resolve := resolver{}
	// The landing's guards and the git protection below read the same git indexes.
	indexes := &gitmeta.Indexes{}
	var privilege string // the project HOME's key (privilegeKey), the same for its plan and its making
	policy := Policy{Workdir: workdir, Network: request.Network, Limits: bounds, Host: scanHost(env), Git: git, User: callerName(env),
		WorkdirMode: mode, Guarded: guarded, KeepAbandoned: request.KeepAbandoned, SelfInside: selfInside, LandMaxEntries: request.LandMaxEntries}
	layers := plannedLayers(env, workdir)
	if layers != "" {
		policy.PolicyBase = filepath.Join(layers, policyBaseName)
	}
	if mode != WorkdirDirect {
		// Where the layers will be, made only once every check has passed (below).
		policy.LayerRoot = layers
		policy.Guarded = append(policy.Guarded, gitmeta.WorkTreeGuarded(workdir, getenv("HOME"), gitmeta.ConfigEnv(getenv), indexes)...)
	}
	if request.HomeDir != "" {
		home, err := resolveDir("home_dir", request.HomeDir)
		if err != nil {
			return Policy{}, err
		}
		if err := checkHome("home_dir", request.HomeDir, home, workdir, guard); err != nil {
			return Policy{}, err
		}
		if err := checkAccess("home_dir", request.HomeDir, home); err != nil {
			return Policy{}, err
		}
		policy.Home = home
	} else {
		// The project HOME is made last, once every other check has passed: a refused
		// policy, or one only previewed, changes nothing on the host. Until then the
		// checks below keep apart from where it will be.
		privilege = privilegeKey(request, workdir, resolve)
		policy.Home = home.Planned(env, workdir, privilege)
	}
	for _, path := range request.ReadWrite {
		real, err := resolve.path("rw", path)
		if err != nil {
			return Policy{}, err
		}
		if err := refusePlantedLinks("rw", path, guard); err != nil {
			return Policy{}, err
		}
		if err := refuseWritable("rw", path, real, projectGuard); err != nil {
			return Policy{}, err
		}
		for _, apart := range []struct{ name, dir string }{{"the workdir", workdir}, {"the HOME", policy.Home}} {
			if within(apart.dir, real) || within(real, apart.dir) {
				return Policy{}, &PolicyError{"rw", describe(path, real), fmt.Sprintf("encloses or lies inside %s %s, which has its own rules (protected paths, a private HOME); name a directory apart from it", apart.name, apart.dir)}
			}
		}
		if err := checkAccess("rw", path, real); err != nil {
			return Policy{}, err
		}
		policy.ReadWrite = append(policy.ReadWrite, real)
	}
	for _, path := range request.ReadOnly {
		real, link, err := resolve.bindable("ro", path)
		if err != nil {
			return Policy{}, err
		}
		if err := refuseHomeDotEntry("ro", path, real, guard); err != nil {
			return Policy{}, err
		}
		// The same directory bound twice, read-write and read-only, would leave the
		// workdir read-only, or fail in bwrap ("Can't stat fd"): say which.
		for _, apart := range []struct{ name, dir string }{{"the workdir", workdir}, {"the HOME", policy.Home}} {
			if apart.dir != "" && real == apart.dir {
				return Policy{}, &PolicyError{"ro", describe(path, real), fmt.Sprintf("is %s, which is bound read-write; make parts of it read-only with --protect PATH instead", apart.name)}
			}
		}
		policy.ReadOnly = append(policy.ReadOnly, real)
		policy.addLink(link, real)
	}
	for _, path := range request.Path {
		real, link, err := resolve.bindable("path", path)
		if err != nil {
			return Policy{}, err
		}
		if info, err := os.Stat(real); err != nil || !info.IsDir() {
			return Policy{}, &PolicyError{"path", describe(path, real), "is not a directory; name the directory that holds the command"}
		}
		if !policy.visible(real) {
			policy.ReadOnly = append(policy.ReadOnly, real)
		}
		entry := real
		if link != "" {
			policy.addLink(link, real)
			entry = link
		}
		if strings.Contains(entry, ":") {
			return Policy{}, &PolicyError{"path", entry, "contains ':', which PATH cannot hold"}
		}
		policy.Path = append(policy.Path, entry)
	}
	for _, path := range request.Protect {
		protected, err := resolveProtect(workdir, path)
		if err != nil {
			return Policy{}, err
		}
		policy.Protect = append(policy.Protect, protected)
	}
	if err := policy.protectGit(env, indexes); err != nil {
		return Policy{}, err
	}
	if policy.Cwd, err = resolveCwd(workdir, request.Cwd); err != nil {
		return Policy{}, err
	}
	for _, entry := range request.Env {
		if err := checkEnvEntry(entry); err != nil {
			return Policy{}, err
		}
		policy.Env = append(policy.Env, entry)
	}
	for _, name := range request.PassEnv {
		if !validEnvName(name) {
			return Policy{}, &PolicyError{"pass_env", name, "not a variable name"}
		}
		if value, ok := environ.Lookup(env, name); ok && value != "" {
			policy.Env = append(policy.Env, name+"="+value)
		}
	}
	if request.Preview {
		return policy, nil // unsealed: Run refuses it
	}
	if git == GitCommit {
		if err := makeGitCommitDirs(workdir); err != nil {
			return Policy{}, err
		}
	}
	if mode != WorkdirDirect {
		policy.LayerRoot, policy.NoLayer = projectLayers(env, workdir, guard)
	} else if git == GitCommit {
		// Where a commit-mode run records the HEAD it starts from (TrustPolicyFile).
		_, _ = projectLayers(env, workdir, guard)
	}
	if request.HomeDir == "" {
		if policy.Home, err = projectHome(env, workdir, privilege, guard); err != nil {
			var homeErr *home.Error
			if !errors.As(err, &homeErr) || !homeErr.Unmade {
				return Policy{}, err
			}
			policy.Home, policy.EphemeralHome = "", true
			policy.HomeFallback = fallbackReason(homeErr)
		}
	}
	return policy.sealed(), nil
}

// resolver answers filepath.EvalSymlinks for one NewPolicy, each path and each of its
// parents once. 500 --ro directories under one parent took 16 ms of NewPolicy when each
// was resolved four times over, every component of it a stat each time; now a stat each
// (BenchmarkNewPolicyManyPaths). The answers are the host as NewPolicy saw it, as they
// always were: the launch opens every source again without following a symlink
// (planLaunch), and the gate checks what bwrap mounted.
type resolver map[string]resolution

type resolution struct {
	real string
	err  error
}

// evalSymlinks is filepath.EvalSymlinks(path). For a clean absolute path whose last
// component is no symlink, that is its parent's answer joined with the name: the parent
// is resolved (and kept) once for all its children, and the name costs one lstat.
// Anything else (a symlink, an error, a relative path) asks filepath.EvalSymlinks
// itself, so every answer and every error is the one it gives.
func (r resolver) evalSymlinks(path string) (string, error) {
	if got, ok := r[path]; ok {
		return got.real, got.err
	}
	if path != "/" && filepath.IsAbs(path) && filepath.Clean(path) == path {
		if parent, err := r.evalSymlinks(filepath.Dir(path)); err == nil {
			named := filepath.Join(parent, filepath.Base(path))
			if info, err := os.Lstat(named); err == nil && info.Mode()&os.ModeSymlink == 0 {
				r[path] = resolution{real: named}
				return named, nil
			}
		}
	}
	real, err := filepath.EvalSymlinks(path)
	r[path] = resolution{real, err}
	return real, err
}

// existing is resolveExisting through r.
func (r resolver) existing(path string) string {
	return pathtree.ResolveExistingWith(path, r.evalSymlinks)
}

// bindable resolves a read-only bind (--ro, --path) and refuses what may not be
// shown even read-only. When the path as given ends in a symlink, link is that link's
// own path (its directory resolved), to be recreated inside: `--ro /etc/os-release`
// binds /usr/lib/os-release and makes /etc/os-release lead there.
func (r resolver) bindable(field, path string) (real, link string, err error) {
	real, err = r.path(field, path)
	if err != nil {
		return "", "", err
	}
	if err := RefuseReadOnly(field, path, real); err != nil {
		return "", "", err
	}
	absolute, _ := filepath.Abs(path)
	parent, err := r.evalSymlinks(filepath.Dir(absolute))
	if err != nil {
		return real, "", nil
	}
	named := filepath.Join(parent, filepath.Base(absolute))
	if info, err := os.Lstat(named); err == nil && info.Mode()&os.ModeSymlink != 0 && named != real {
		return real, named, nil
	}
	return real, "", nil
}

// addLink records a symlink to recreate inside, unless a bind already shows the host's.
func (policy *Policy) addLink(link, target string) {
	if link == "" || policy.visible(link) || slices.ContainsFunc(policy.Links, func(l Link) bool { return l.Path == link }) {
		return
	}
	policy.Links = append(policy.Links, Link{Path: link, Target: target})
}

// visible reports whether a host path is already seen inside at the same path: under
// /usr, a bound system root, the workdir, the HOME or another bind.
func (policy Policy) visible(path string) bool {
	dirs := []string{"/usr", policy.Workdir}
	if policy.Home != "" {
		dirs = append(dirs, policy.Home)
	}
	for _, root := range policy.Host.Roots {
		if root.Target == "" {
			dirs = append(dirs, root.Path)
		}
	}
	for _, path := range policy.Host.Etc {
		if policy.Network || !isNetworkEtc(path) {
			dirs = append(dirs, path)
		}
	}
	dirs = append(append(dirs, policy.ReadOnly...), policy.ReadWrite...)
	return slices.ContainsFunc(dirs, func(dir string) bool { return within(dir, path) })
}

// resolveCwd is where the command starts: --cwd (relative to the workdir), else the
// current directory when it is inside the workdir, else the workdir.
func resolveCwd(workdir, cwd string) (string, error) {
	if cwd == "" {
		here, err := os.Getwd()
		if err != nil {
			return "", nil
		}
		if real, err := filepath.EvalSymlinks(here); err == nil && within(workdir, real) && real != workdir {
			return real, nil
		}
		return "", nil
	}
	if filepath.IsAbs(cwd) {
		return "", &PolicyError{"cwd", cwd, "must be relative to the workdir"}
	}
	real, err := resolveDir("cwd", filepath.Join(workdir, cwd))
	if err != nil {
		return "", &PolicyError{"cwd", cwd, "must name a directory inside the workdir " + workdir}
	}
	if !within(workdir, real) {
		return "", &PolicyError{"cwd", describe(cwd, real), "is outside the workdir " + workdir}
	}
	if real == workdir {
		return "", nil
	}
	return real, nil
}

// checkAccess refuses a read-write directory the caller itself cannot enter or write:
// bwrap would fail to bind or the command to write, and the cause is the directory's
// permissions, not the host's sandboxing.
func checkAccess(field, given, real string) error {
	info, err := os.Stat(real)
	if err != nil {
		return &PolicyError{field, describe(given, real), err.Error()}
	}
	mode := uint32(unix.W_OK)
	if info.IsDir() {
		mode |= unix.X_OK | unix.R_OK
	}
	if err := unix.Access(real, mode); err != nil {
		return &PolicyError{field, describe(given, real), fmt.Sprintf("you (uid %d) cannot %s it: %v; choose a directory you own, or fix its permissions", os.Geteuid(), map[bool]string{true: "enter and write", false: "write"}[info.IsDir()], err)}
	}
	return nil
}

func resolveAll(paths []string) []string {
	resolved := make([]string, 0, len(paths))
	for _, path := range paths {
		resolved = append(resolved, resolveExisting(filepath.Clean(path)))
	}
	return resolved
}

// resolveProtect checks a --protect path: relative to the workdir, existing, and reached
// without any symlink. A protected symlink, or one on the way to the path, lives in the
// writable workdir: the command could retarget it, and the host would then see another
// file at the protected name.
func resolveProtect(workdir, path string) (string, error) {
	if filepath.IsAbs(path) {
		return "", &PolicyError{"protect", path, "must be relative to the workdir"}
	}
	lexical := filepath.Join(workdir, path)
	if !within(workdir, lexical) || lexical == workdir {
		return "", &PolicyError{"protect", path, "must name a path inside the workdir"}
	}
	real, err := resolvePath("protect", lexical)
	if err != nil {
		return "", err
	}
	if real != lexical {
		return "", &PolicyError{"protect", path, fmt.Sprintf("is reached through a symlink (it resolves to %s); a command could retarget the link, so protect the real path instead", real)}
	}
	// A second name for a protected file, made by an earlier run (`ln ci.yml .x`), would
	// let the command write it through the unprotected name.
	if info, err := os.Lstat(real); err == nil && info.Mode().IsRegular() {
		if stat, ok := info.Sys().(*syscall.Stat_t); ok && stat.Nlink > 1 {
			return "", &PolicyError{"protect", path, fmt.Sprintf("has %d hard links; a command could change it through another name, so replace it with a copy of its own (cp %s %s.new && mv %s.new %s)", stat.Nlink, path, path, path, path)}
		}
	}
	return real, nil
}

// callerHomes are the caller's home directories, resolved: $HOME and the passwd entry's.
func callerHomes(getenv func(string) string) []string {
	var homes []string
	for _, home := range []string{getenv("HOME"), passwdHome(os.Getuid())} {
		if home == "" || !filepath.IsAbs(home) {
			continue
		}
		if real, err := filepath.EvalSymlinks(home); err == nil && !slices.Contains(homes, real) {
			homes = append(homes, real)
		}
	}
	return homes
}

// trustedState resolves bwrapkit's state paths; a path that does not exist yet is kept
// with its existing prefix resolved, since a workdir must not enclose where it will be
// created either.
func trustedState(given, cacheDirs []string) []string {
	all := append(slices.Clone(given), cacheDirs...)
	var trusted []string
	for _, path := range all {
		if path == "" || !filepath.IsAbs(path) {
			continue
		}
		real := resolveExisting(filepath.Clean(path))
		if !slices.Contains(trusted, real) {
			trusted = append(trusted, real)
		}
	}
	return trusted
}

// lookupUser is the user database's name for uid.
func lookupUser(uid int) (string, error) {
	account, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return "", err
	}
	return account.Username, nil
}

// passwdHome is the home directory the user database names for uid, or "".
func passwdHome(uid int) string {
	account, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return ""
	}
	return account.HomeDir
}

// scratchDirs are bwrapkit's own directories under the caller's cache, resolved.
func scratchDirs(cacheDirs []string) []string {
	var dirs []string
	for _, probeDir := range cacheDirs {
		dirs = append(dirs, resolveExisting(filepath.Dir(probeDir))) // <cache>/bwrapkit
	}
	return dirs
}

// resolveExisting resolves the longest existing prefix of path and keeps the rest.
func resolveExisting(path string) string { return pathtree.ResolveExisting(path) }

func checkEnvEntry(entry string) error {
	name, value, found := strings.Cut(entry, "=")
	if !found {
		return &PolicyError{"env", entry, "expected NAME=VALUE"}
	}
	if !validEnvName(name) {
		return &PolicyError{"env", entry, "not a variable name"}
	}
	if strings.ContainsRune(value, 0) {
		// No environment can carry a NUL: exec would fail after the sandbox was built.
		return &PolicyError{"env", strings.ReplaceAll(entry, "\x00", `\0`), "its value holds a NUL byte, which no environment variable can carry; remove it"}
	}
	return nil
}

func validEnvName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "=\x00 ")
}

func resolveDir(field, path string) (string, error) {
	if path == "" {
		path = "."
	}
	real, err := resolvePath(field, path)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(real)
	if err != nil {
		return "", &PolicyError{field, path, err.Error()}
	}
	if !info.IsDir() {
		return "", &PolicyError{field, path, "is not a directory"}
	}
	return real, nil
}

// resolvePath makes path absolute, clean and free of symlinks, as bwrap will see it.
func resolvePath(field, path string) (string, error) { return resolver{}.path(field, path) }

// path is resolvePath through r.
func (r resolver) path(field, path string) (string, error) {
	absolute, err := filepath.Abs(path)
	if err != nil {
		return "", &PolicyError{field, path, err.Error()}
	}
	real, err := r.evalSymlinks(absolute)
	if errors.Is(err, os.ErrNotExist) {
		return "", &PolicyError{field, path, "does not exist"}
	}
	if err != nil {
		return "", &PolicyError{field, path, err.Error()}
	}
	return real, nil
}

// refuseSharedWorkdir refuses a workdir another user can write (not the caller, not
// root): that user could plant what the caller's next host tool trusts (a
// .git/commondir for root's `git status`) whatever the sandbox does.
func refuseSharedWorkdir(given, workdir string) error {
	var stat unix.Stat_t
	if err := unix.Stat(workdir, &stat); err != nil {
		return &PolicyError{"workdir", describe(given, workdir), err.Error()}
	}
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	switch {
	case stat.Mode&0o002 != 0:
		return &PolicyError{"workdir", describe(given, workdir), fmt.Sprintf("is writable by every user (mode %04o); any of them could plant files your host tools trust: chmod o-w it", stat.Mode&0o7777)}
	case stat.Mode&0o020 != 0 && stat.Gid != gid && stat.Gid != 0:
		return &PolicyError{"workdir", describe(given, workdir), fmt.Sprintf("is writable by group %d, not yours; its members could plant files your host tools trust: chmod g-w it", stat.Gid)}
	case stat.Uid != uid && stat.Uid != 0:
		return &PolicyError{"workdir", describe(given, workdir), fmt.Sprintf("belongs to uid %d, who can write it and plant files your host tools trust; run as that user, or copy the project", stat.Uid)}
	}
	return nil
}
