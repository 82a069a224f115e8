package sandbox

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
)

// DefaultPath is the command's PATH inside the sandbox.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// Argv is the complete bwrap command line for running cmd under policy, bwrapPath
// first. It is pure: everything it depends on is in its arguments.
func Argv(bwrapPath string, policy Policy, cmd []string) ([]string, error) {
	if err := check(bwrapPath, policy, cmd); err != nil {
		return nil, err
	}
	argv := make([]string, 0, 96+2*len(policy.Env)+len(cmd))
	argv = append(argv, bwrapPath,
		// As root, --unshare-all silently skips the user namespace; ask for it by name.
		"--unshare-all", "--unshare-user")
	if policy.Network {
		argv = append(argv, "--share-net")
	}
	if policy.Features.Has("disable-userns") {
		// A user namespace inside is the usual first step of a kernel exploit.
		argv = append(argv, "--disable-userns")
	}
	argv = append(argv, "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv")

	argv = append(argv, "--ro-bind", "/usr", "/usr")
	for _, root := range policy.Host.Roots {
		if root.Target != "" {
			argv = append(argv, "--symlink", root.Target, root.Path)
		} else {
			argv = append(argv, "--ro-bind", root.Path, root.Path)
		}
	}
	for _, path := range policy.Host.Etc {
		if isNetworkEtc(path) && !policy.Network {
			continue
		}
		argv = append(argv, "--ro-bind", path, path)
	}
	argv = append(argv, "--proc", "/proc", "--dev", "/dev",
		"--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--tmpfs", "/run")

	for _, bind := range binds(policy) {
		argv = append(argv, bind.option, bind.path, bind.path)
	}
	// Last of the mounts: anything not bound read-write above now fails with EROFS
	// instead of landing silently in bwrap's throwaway root tmpfs.
	argv = append(argv, "--remount-ro", "/")

	for _, entry := range environment(policy) {
		name, value, _ := strings.Cut(entry, "=")
		argv = append(argv, "--setenv", name, value)
	}
	argv = append(argv, "--chdir", policy.Workdir, "--")
	return append(argv, cmd...), nil
}

type bind struct {
	option string
	path   string
}

// binds orders the policy's binds parent before child, so a read-only path inside
// the workdir lands on top of it, and the workdir on top of a read-only parent.
func binds(policy Policy) []bind {
	all := make([]bind, 0, 2+len(policy.ReadOnly)+len(policy.Protect))
	all = append(all, bind{"--bind", policy.Workdir})
	for _, path := range policy.ReadOnly {
		all = append(all, bind{"--ro-bind", path})
	}
	for _, path := range policy.Protect {
		all = append(all, bind{"--ro-bind", path})
	}
	slices.SortStableFunc(all, func(a, b bind) int { return depth(a.path) - depth(b.path) })
	return all
}

func depth(path string) int {
	if path == "/" {
		return 0
	}
	return strings.Count(path, "/")
}

// environment is the command's whole environment, in the order it is set (later wins).
func environment(policy Policy) []string {
	env := []string{"PATH=" + DefaultPath, "HOME=" + policy.Workdir, "TMPDIR=/tmp"}
	env = append(env, policy.Host.Env...)
	return append(env, policy.Env...)
}

func check(bwrapPath string, policy Policy, cmd []string) error {
	if len(cmd) == 0 || cmd[0] == "" {
		return errors.New("no command to run")
	}
	if !isCleanAbs(bwrapPath) {
		return &PolicyError{"bwrap", bwrapPath, "must be an absolute path"}
	}
	if !isCleanAbs(policy.Workdir) {
		return &PolicyError{"--workdir", policy.Workdir, "must be an absolute, resolved path"}
	}
	if err := refuseRoot("--workdir", policy.Workdir, policy.Workdir); err != nil {
		return err
	}
	for _, path := range policy.ReadOnly {
		if !isCleanAbs(path) {
			return &PolicyError{"--ro", path, "must be an absolute, resolved path"}
		}
	}
	for _, path := range policy.Protect {
		if !isCleanAbs(path) || !within(policy.Workdir, path) {
			return &PolicyError{"--protect", path, "must be a resolved path inside the workdir"}
		}
	}
	for _, entry := range policy.Env {
		if err := checkEnvEntry(entry); err != nil {
			return err
		}
	}
	return nil
}

func isCleanAbs(path string) bool {
	return filepath.IsAbs(path) && filepath.Clean(path) == path
}
