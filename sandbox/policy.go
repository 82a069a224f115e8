// Package sandbox turns a Policy into a bwrap argv (pure) and runs a command behind it,
// failing closed: if the boundary cannot be proven built, the command never counts as run.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	// Host is the host's layout the argv mirrors; see ScanHost.
	Host Host
	// Features are the bwrap binary's options; see Probe. Zero means "not probed":
	// Run probes, Argv leaves out what it cannot know is supported.
	Features Features
}

// RefusedWorkdirs are the roots a workdir may never be: binding one read-write would
// hand the command the system itself.
var RefusedWorkdirs = []string{"/", "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/boot", "/proc", "/sys", "/dev", "/run", "/var"}

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
}

// NewPolicy resolves a Request against the file system and the caller's environment
// (environ, as os.Environ returns it) into a Policy: the only place where sandbox
// policy touches the host.
func NewPolicy(request Request, environ []string) (Policy, error) {
	getenv := getenvFrom(environ)
	workdir, err := resolveDir("--workdir", request.Workdir)
	if err != nil {
		return Policy{}, err
	}
	policy := Policy{Workdir: workdir, Network: request.Network, Host: ScanHost(environ)}
	for _, path := range request.ReadOnly {
		real, err := resolvePath("--ro", path)
		if err != nil {
			return Policy{}, err
		}
		policy.ReadOnly = append(policy.ReadOnly, real)
	}
	for _, path := range request.Protect {
		if filepath.IsAbs(path) {
			return Policy{}, &PolicyError{"--protect", path, "must be relative to the workdir"}
		}
		real, err := resolvePath("--protect", filepath.Join(workdir, path))
		if err != nil {
			return Policy{}, err
		}
		if !within(workdir, real) {
			// A link out of the workdir leads somewhere the sandbox cannot see anyway.
			continue
		}
		policy.Protect = append(policy.Protect, real)
	}
	if git, ok := gitPath(workdir); ok {
		policy.Protect = append(policy.Protect, git)
	}
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
		if value, ok := lookup(getenv, name); ok {
			policy.Env = append(policy.Env, name+"="+value)
		}
	}
	return policy, nil
}

// gitPath is the workdir's .git (a directory, or a worktree's file) to re-bind read-only,
// so hooks and config the host's git will run cannot be planted from inside. A .git that
// is a symlink out of the workdir is not bound at all: bwrap would follow it and mount its
// target (say /etc, planted by an earlier run) read-only inside, for the command to read.
func gitPath(workdir string) (string, bool) {
	git := filepath.Join(workdir, ".git")
	if _, err := os.Lstat(git); err != nil {
		return "", false
	}
	real, err := filepath.EvalSymlinks(git)
	if err != nil || !within(workdir, real) {
		return "", false
	}
	return real, true
}

func lookup(getenv func(string) string, name string) (string, bool) {
	value := getenv(name)
	return value, value != ""
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
	if path == "." {
		// Said plainly: the user may not have passed --workdir at all.
		path = "(the current directory, " + real + ")"
	}
	return real, refuseRoot(field, path, real)
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

func refuseRoot(field, given, real string) error {
	for _, root := range RefusedWorkdirs {
		if real == root {
			return &PolicyError{field, given, fmt.Sprintf("is the system directory %s; choose a project directory", root)}
		}
	}
	return nil
}

// within reports whether path is dir or below it.
func within(dir, path string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}
