package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// CacheLayersSuffix names the directory beside a project HOME that holds its cache layers'
// upper and work directories (HOME + CacheLayersSuffix): bwrapkit's own, private, outside
// the HOME, so no sandbox reaches a layer but through its overlay.
const CacheLayersSuffix = ".layers"

// A run's attachments (Options.Caches, Options.NetProxy) exist only once the policy does
// (the project HOME's cache layers, the proxy's socket), so NewPolicy cannot seal them;
// Run checks them here as NewPolicy checks its own paths, before anything runs.

// checkCaches: each lower layer must be a directory of the caller's that may be shown
// (no system tree, no shared root); each upper and work directory must lie in the HOME's
// own layers directory; each destination in the HOME or at the lower layer's own path,
// apart from the workdir.
func checkCaches(policy Policy, layers []CacheLayer) error {
	if len(layers) == 0 {
		return nil
	}
	if policy.Home == "" || policy.EphemeralHome {
		return &PolicyError{"cache", policy.Home, "cache layers need a project HOME"}
	}
	layersDir := policy.Home + CacheLayersSuffix
	for _, layer := range layers {
		for _, path := range []string{layer.Lower, layer.Upper, layer.Work, layer.Dest} {
			if !isCleanAbs(path) {
				return &PolicyError{"cache", path, "a cache layer's paths must be absolute and clean"}
			}
		}
		if err := RefuseReadOnly("cache", layer.Lower, layer.Lower); err != nil {
			return err
		}
		// A cache is the caller's own data: never a system tree, nor one of the roots every
		// user shares. Shown at its own path it is writable inside (the overlay), and the
		// system is read-only by promise.
		for _, tree := range systemTrees() {
			if within(tree, layer.Lower) {
				return &PolicyError{"cache", layer.Lower, fmt.Sprintf("lies at or under %s, which is no tool cache of the caller's", tree)}
			}
		}
		if slices.Contains(sharedRoots(), layer.Lower) {
			return &PolicyError{"cache", layer.Lower, "is a root every user shares, which is no tool cache of the caller's"}
		}
		if err := RefuseCacheLower(layer.Lower, os.Getenv); err != nil {
			return err
		}
		if info, err := os.Lstat(layer.Lower); err != nil || !info.IsDir() {
			return &PolicyError{"cache", layer.Lower, "a cache's lower layer must be a directory reached without a symlink"}
		}
		for _, dir := range []string{layer.Upper, layer.Work} {
			if !within(layersDir, dir) || dir == layersDir {
				return &PolicyError{"cache", dir, fmt.Sprintf("a cache layer's writable directories lie in the HOME's own %s", layersDir)}
			}
		}
		if layer.Dest != layer.Lower && !within(policy.Home, layer.Dest) {
			return &PolicyError{"cache", layer.Dest, "a cache layer goes inside the project HOME or at its own path"}
		}
		if within(policy.Workdir, layer.Dest) || within(layer.Dest, policy.Workdir) || within(layer.Lower, policy.Workdir) ||
			within(policy.Workdir, layer.Upper) || within(policy.Home, layer.Upper) {
			return &PolicyError{"cache", layer.Dest, "a cache layer lies apart from the workdir, and its own layer outside both the HOME and the workdir"}
		}
	}
	return nil
}

// RefuseCacheLower refuses a cache's lower layer at or under one of the caller's home
// dot-entries (~/.ssh, ~/.config, ~/.gnupg), as --rw refuses them: a cache is shown to
// the command, and a caller that named ~/.ssh would show it keys. Tool caches are the
// exception: strictly below the XDG cache directory (~/.cache or $XDG_CACHE_HOME), except
// bwrapkit's own state there, and npm's ~/.npm.
func RefuseCacheLower(lower string, getenv func(string) string) error {
	xdg := getenv("XDG_CACHE_HOME")
	for _, home := range callerHomes(getenv) {
		dot := homeDotEntry(home, lower)
		if dot == "" {
			continue
		}
		for _, cache := range []string{filepath.Join(home, ".cache"), filepath.Clean(xdg)} {
			if filepath.IsAbs(cache) && lower != cache && within(cache, lower) && !within(filepath.Join(cache, "bwrapkit"), lower) {
				dot = ""
			}
		}
		if dot == "" || lower == filepath.Join(home, ".npm") || within(filepath.Join(home, ".npm"), lower) {
			continue
		}
		return &PolicyError{"cache", lower, fmt.Sprintf("is at or under %s, where your tools keep configuration and keys; a cache's lower layer is a tool cache (below ~/.cache or $XDG_CACHE_HOME, or ~/.npm)", dot)}
	}
	return nil
}

// checkNetProxy: only for a policy without the host network; a Joiner alone, or a socket
// that is a unix socket of the caller's in a private directory and a bridge that is a
// regular executable file, both outside the workdir.
func checkNetProxy(policy Policy, proxy NetProxy, joiner Joiner) error {
	if proxy.Joined || joiner != nil {
		switch {
		case !proxy.Joined || joiner == nil:
			return &PolicyError{"net_allow", "(joined)", "a joined proxy needs both NetProxy.Joined and Options.NetJoiner"}
		case policy.Network:
			return &PolicyError{"net_allow", "(joined)", "a proxy needs a sandbox without the host network (--net)"}
		case proxy.Socket != "" || proxy.Bridge != "":
			return &PolicyError{"net_allow", proxy.Socket, "a proxy joins the sandbox's namespace or hands over through a socket and bridge, not both"}
		}
		return nil
	}
	if proxy.Socket == "" {
		return nil
	}
	if policy.Network {
		return &PolicyError{"net_allow", proxy.Socket, "a proxy needs a sandbox without the host network (--net)"}
	}
	for _, path := range []string{proxy.Socket, proxy.Bridge} {
		if path == "" && proxy.Bridge == "" {
			continue // no bridge: the command is its own (the doctor's probe)
		}
		if !isCleanAbs(path) {
			return &PolicyError{"net_allow", path, "the proxy's socket and bridge must be absolute, clean paths"}
		}
		// The socket outside the workdir, which the command can write. The bridge may be a
		// checkout's own ./bwrapkit: it is bound read-only from the host, where the
		// transactional run leaves it untouched (and guarded), and a direct run refuses a
		// workdir that holds bwrapkit.
		if path == proxy.Socket && within(policy.Workdir, path) {
			return &PolicyError{"net_allow", path, "the proxy's socket lies inside the workdir, which the command can write"}
		}
	}
	if info, err := os.Lstat(proxy.Socket); err != nil || info.Mode().Type() != os.ModeSocket {
		return &PolicyError{"net_allow", proxy.Socket, "is not a unix socket"}
	}
	// Only a socket of the caller's own, in a private directory of the caller's (as
	// netproxy.Listen makes one): a path to any socket would let a caller bind the host's
	// own controls (docker.sock, the session bus), which --ro refuses under /run.
	if within("/run", proxy.Socket) {
		return &PolicyError{"net_allow", proxy.Socket, "is at or under /run, where the host's sockets live; the proxy's socket is one netproxy.Listen made"}
	}
	if err := privateOwn(filepath.Dir(proxy.Socket)); err != nil {
		return &PolicyError{"net_allow", proxy.Socket, "the proxy's socket lies in a private directory of the caller's (as netproxy.Listen makes): " + err.Error()}
	}
	if proxy.Bridge != "" {
		if info, err := os.Stat(proxy.Bridge); err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
			return &PolicyError{"net_allow", proxy.Bridge, "the bridge is not an executable file"}
		}
	}
	return nil
}

// privateOwn: dir is a real directory (no symlink) of this process's user, 0700.
func privateOwn(dir string) error {
	var stat unix.Stat_t
	if err := unix.Lstat(dir, &stat); err != nil {
		return err
	}
	switch {
	case stat.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("%s is not a directory", dir)
	case int(stat.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to uid %d", dir, stat.Uid)
	case stat.Mode&0o077 != 0:
		return fmt.Errorf("%s is open to others (mode %04o)", dir, stat.Mode&0o7777)
	}
	return nil
}
