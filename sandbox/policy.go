// Package sandbox turns a Policy into a bwrap argv (pure) and runs a command behind it,
// failing closed: if the boundary cannot be proven built, the command never counts as run.
package sandbox

import (
	"errors"
	"fmt"
	"github.com/bwrapkit/bwrapkit/internal/environ"
	"github.com/bwrapkit/bwrapkit/sandbox/limits"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Policy is what a caller asks of the sandbox. Paths must be absolute and already
// resolved (NewPolicy does that); Argv checks them again and refuses what is unsafe.
type Policy struct {
	// Workdir is the one read-write bind, at its real (symlink-resolved) path.
	Workdir string
	// ReadOnly are extra read-only binds at the same path (a toolchain, say).
	ReadOnly []string
	// Protect are paths inside Workdir re-bound read-only; NewPolicy adds .git.
	Protect []string
	// Network keeps the host network namespace.
	Network bool
	// Env are NAME=VALUE entries set inside, after the defaults.
	Env []string
	// Limits are the command's resource bounds; the zero value is the defaults.
	Limits limits.Limits
	// Host is the host's layout the argv mirrors; see ScanHost.
	Host Host
	// Features are the bwrap binary's options; see Probe. Zero means "not probed":
	// Run probes, Argv leaves out what it cannot know is supported.
	Features Features
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

// Request is a policy as a user states it: relative paths, symlinks and all.
type Request struct {
	Workdir  string   // default: the current directory
	ReadOnly []string // absolute or relative to the current directory
	Protect  []string // relative to Workdir
	Network  bool
	Env      []string // NAME=VALUE
	PassEnv  []string // names copied from the caller's environment when set
	Limits   []string // NAME=VALUE bounds (see package limits), on top of the defaults
	// Trusted is bwrapkit's own state the sandbox must never be able to write: its home
	// (with the managed bwrap) and the bwrap in use. The probe cache is added by NewPolicy.
	Trusted []string
}

// NewPolicy resolves a Request against the file system and the caller's environment
// (env, as os.Environ returns it) into a Policy: the only place where sandbox
// policy touches the host. Every refusal is decided on the fully resolved path.
func NewPolicy(request Request, env []string) (Policy, error) {
	getenv := environ.Getenv(env)
	guard := Guard{Home: callerHomes(getenv), Trusted: trustedState(request.Trusted, env), Scratch: scratchDirs(env)}
	workdir, err := resolveDir("--workdir", request.Workdir)
	if err != nil {
		return Policy{}, err
	}
	given := request.Workdir
	if given == "" || given == "." {
		given = "(the current directory)"
	}
	if err := RefuseWritable("--workdir", given, workdir, guard); err != nil {
		return Policy{}, err
	}
	bounds, err := limits.Parse(request.Limits, limits.Defaults())
	if err != nil {
		var limitErr *limits.Error
		if errors.As(err, &limitErr) {
			return Policy{}, &PolicyError{"--limit", limitErr.Spec, limitErr.Reason + " (names: " + strings.Join(limitErr.Names, ", ") + ")"}
		}
		return Policy{}, err
	}
	policy := Policy{Workdir: workdir, Network: request.Network, Limits: bounds, Host: ScanHost(env)}
	for _, path := range request.ReadOnly {
		real, err := resolvePath("--ro", path)
		if err != nil {
			return Policy{}, err
		}
		if err := RefuseReadOnly("--ro", path, real); err != nil {
			return Policy{}, err
		}
		policy.ReadOnly = append(policy.ReadOnly, real)
	}
	for _, path := range request.Protect {
		protected, err := resolveProtect(workdir, path)
		if err != nil {
			return Policy{}, err
		}
		policy.Protect = append(policy.Protect, protected)
	}
	gitProtected, err := gitEntries(workdir)
	if err != nil {
		return Policy{}, err
	}
	policy.Protect = append(policy.Protect, gitProtected...)
	for _, entry := range request.Env {
		if err := checkEnvEntry(entry); err != nil {
			return Policy{}, err
		}
		policy.Env = append(policy.Env, entry)
	}
	for _, name := range request.PassEnv {
		if !validEnvName(name) {
			return Policy{}, &PolicyError{"--pass-env", name, "not a variable name"}
		}
		if value, ok := environ.Lookup(env, name); ok && value != "" {
			policy.Env = append(policy.Env, name+"="+value)
		}
	}
	return policy, nil
}

// resolveProtect checks a --protect path: relative to the workdir, existing, and reached
// without any symlink. A protected symlink, or one on the way to the path, lives in the
// writable workdir: the command could retarget it, and the host would then see another
// file at the protected name.
func resolveProtect(workdir, path string) (string, error) {
	if filepath.IsAbs(path) {
		return "", &PolicyError{"--protect", path, "must be relative to the workdir"}
	}
	lexical := filepath.Join(workdir, path)
	if !within(workdir, lexical) || lexical == workdir {
		return "", &PolicyError{"--protect", path, "must name a path inside the workdir"}
	}
	real, err := resolvePath("--protect", lexical)
	if err != nil {
		return "", err
	}
	if real != lexical {
		return "", &PolicyError{"--protect", path, fmt.Sprintf("is reached through a symlink (it resolves to %s); a command could retarget the link, so protect the real path instead", real)}
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
func trustedState(given []string, env []string) []string {
	all := append(slices.Clone(given), defaultProber(env).CacheDirs...)
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

// passwdHome is the home directory the user database names for uid, or "".
func passwdHome(uid int) string {
	account, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return ""
	}
	return account.HomeDir
}

// scratchDirs are bwrapkit's own directories under the caller's cache, resolved.
func scratchDirs(env []string) []string {
	var dirs []string
	for _, probeDir := range defaultProber(env).CacheDirs {
		dirs = append(dirs, resolveExisting(filepath.Dir(probeDir))) // <cache>/bwrapkit
	}
	return dirs
}

// resolveExisting resolves the longest existing prefix of path and keeps the rest.
func resolveExisting(path string) string {
	rest := ""
	for current := path; ; current = filepath.Dir(current) {
		if real, err := filepath.EvalSymlinks(current); err == nil {
			return filepath.Join(real, rest)
		}
		if current == "/" || current == "." {
			return path
		}
		rest = filepath.Join(filepath.Base(current), rest)
	}
}

func checkEnvEntry(entry string) error {
	name, _, found := strings.Cut(entry, "=")
	if !found {
		return &PolicyError{"--env", entry, "expected NAME=VALUE"}
	}
	if !validEnvName(name) {
		return &PolicyError{"--env", entry, "not a variable name"}
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
func resolvePath(field, path string) (string, error) {
	absolute, err := filepath.Abs(path)
	if err != nil {
		return "", &PolicyError{field, path, err.Error()}
	}
	real, err := filepath.EvalSymlinks(absolute)
	if errors.Is(err, os.ErrNotExist) {
		return "", &PolicyError{field, path, "does not exist"}
	}
	if err != nil {
		return "", &PolicyError{field, path, err.Error()}
	}
	return real, nil
}
