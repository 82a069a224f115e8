package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bwrapkit/bwrapkit/internal/environ"
	"github.com/bwrapkit/bwrapkit/internal/pathtree"
)

// The refusal rules are decided on fully resolved paths only: `--workdir /bin` on a
// merged-/usr host is /usr/bin, and a rule on the unresolved string would let it through.

// systemTrees are refused as a read-write path anywhere at or under them: binding one
// hands the command the system itself.
func systemTrees() []string {
	return []string{"/usr", "/etc", "/boot", "/proc", "/sys", "/dev", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}
}

// sharedRoots are refused as a read-write path exactly: their children are where projects
// live (/home/u/src, /var/lib/ci/build), but binding the root itself exposes every user's
// or every service's files.
func sharedRoots() []string {
	return []string{"/", "/var", "/var/lib", "/run", "/tmp", "/var/tmp", "/home"}
}

// readOnlyRefused are refused even read-only: the host's whole file system, its processes
// (/proc/1/environ, /proc/*/root), its kernel objects and its devices.
func readOnlyRefused() []string { return []string{"/", "/proc", "/sys", "/dev"} }

// reachGuard is what the caller must keep out of a sandbox's reach for writing, besides the
// fixed rules: the caller's home and bwrapkit's own trusted state (its home with the
// managed bwrap, the probe cache, the bwrap in use), all resolved.
type reachGuard struct {
	Home    []string // the caller's home directory ($HOME and the passwd entry)
	Trusted []string // a workdir may enclose none of these nor lie inside one
	// Scratch are bwrapkit's own directories for sandboxes (the doctor's self-test
	// workdirs under its cache): strictly inside one, a home dot-entry is no refusal.
	Scratch []string
}

// refuseWritable says why a resolved path may not be bound read-write, or nil. field and
// given name the flag and the path as the user wrote it, for the message.
func refuseWritable(field, given, real string, guard reachGuard) error {
	for _, tree := range systemTrees() {
		if within(tree, real) {
			return &PolicyError{field, describe(given, real), fmt.Sprintf("is at or under the system directory %s, which is never writable inside; choose a project directory", tree)}
		}
	}
	if slices.Contains(sharedRoots(), real) {
		return &PolicyError{field, describe(given, real), fmt.Sprintf("is %s itself, shared by every user or service; choose a directory below it", real)}
	}
	if slices.Contains(guard.Home, real) {
		return &PolicyError{field, describe(given, real), "is your home directory, which holds your keys and tool configuration; choose a project directory below it"}
	}
	for _, trusted := range guard.Trusted {
		if trusted == "" {
			continue
		}
		if within(real, trusted) || within(trusted, real) {
			return &PolicyError{field, describe(given, real), fmt.Sprintf("encloses or lies inside %s, bwrapkit's own state (its home, probe cache, the bwrap in use or bwrapkit itself), which a command must never be able to replace; choose another directory or move that state (--home, XDG_CACHE_HOME, --bwrap)", trusted)}
		}
	}
	return refuseHomeDotEntry(field, given, real, guard)
}

// refuseHomeDotEntry refuses a path at or under one of the caller's home dot-entries
// (~/.ssh, ~/.config, ~/.bashrc): --rw and the workdir would let a command write there,
// --ro would show it keys, and --report would have bwrapkit itself write a start-up file.
func refuseHomeDotEntry(field, given, real string, guard reachGuard) error {
	for _, home := range guard.Home {
		inScratch := slices.ContainsFunc(guard.Scratch, func(dir string) bool { return dir != real && within(dir, real) })
		if dot := homeDotEntry(home, real); dot != "" && !inScratch {
			return &PolicyError{field, describe(given, real), fmt.Sprintf("is at or under %s, where your tools keep configuration, keys and caches (~/.ssh/authorized_keys, ~/.config/git, shell start-up files); choose a project directory", dot)}
		}
	}
	return nil
}

// RefuseCallerDotEntry refuses a resolved path bwrapkit itself would write for the caller
// (the CLI's --report) when it lies at or under one of the caller's home dot-entries
// (~/.ssh, ~/.config, ~/.bashrc): bwrapkit would write a start-up file itself. env is
// the caller's environment (its HOME); field and given name the input, for the message.
func RefuseCallerDotEntry(field, given, real string, env []string) error {
	cacheDirs := DefaultProber(env).CacheDirs
	return refuseHomeDotEntry(field, given, real, reachGuard{Home: callerHomes(environ.Getenv(env)), Scratch: scratchDirs(cacheDirs)})
}

// RefuseReadOnly says why a resolved path may not be bound even read-only, or nil.
func RefuseReadOnly(field, given, real string) error {
	if within("/proc", real) || slices.Contains(readOnlyRefused(), real) {
		return &PolicyError{field, describe(given, real), "would show the host itself (its whole file system, processes, kernel objects or devices) inside; bind the specific directory the command needs"}
	}
	if within("/run", real) {
		// Read-only stops writes, not connect(): a socket under /run (docker.sock, the
		// session bus, an ssh or gpg agent in /run/user/UID) is the host's control.
		return &PolicyError{field, describe(given, real), "is at or under /run, where the host's sockets live (docker.sock, the session bus, ssh and gpg agents): a read-only bind still lets a command connect to them"}
	}
	return nil
}

// homeDotEntry is the dot-entry directly under home that path is at or under (~/.ssh for
// ~/.ssh/keys), or "".
func homeDotEntry(home, path string) string {
	if path == home || !within(home, path) {
		return ""
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(path, strings.TrimSuffix(home, "/")+"/"), "/")
	if strings.HasPrefix(first, ".") {
		return filepath.Join(home, first)
	}
	return ""
}

// describe names a path as given and, when different, as resolved.
func describe(given, real string) string {
	if given == real || given == "" {
		return real
	}
	return fmt.Sprintf("%s (%s)", given, real)
}

// within reports whether path is dir or below it (package pathtree's rule).
func within(dir, path string) bool { return pathtree.Within(dir, path) }

// ancestorsBelow lists the directories strictly between dir and path (path inside dir),
// outermost first: /w, /w/a/b/c -> /w/a, /w/a/b.
func ancestorsBelow(dir, path string) []string {
	var chain []string
	for parent := filepath.Dir(path); parent != dir && within(dir, parent) && parent != "/"; parent = filepath.Dir(parent) {
		chain = append(chain, parent)
	}
	slices.Reverse(chain)
	return chain
}

// RefuseInside refuses a file bwrapkit writes for later use (argv's --seccomp-file) at or
// under a path the sandbox may write: the workdir, a --rw path or the HOME.
func (policy Policy) RefuseInside(field, path string) error {
	real := resolveExisting(filepath.Clean(absolute(path)))
	for _, dir := range append([]string{policy.Workdir, policy.Home}, policy.ReadWrite...) {
		if dir != "" && within(dir, real) {
			return &PolicyError{field, describe(path, real), fmt.Sprintf("is inside %s, which the sandbox may write: a command could replace it; keep it outside, root-owned where root runs", dir)}
		}
	}
	return nil
}

func absolute(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// refusePlantedLinks refuses a read-write path whose resolution passes through a symlink
// that a sandbox could have planted: an earlier run with workdir P leaves `P/sub ->
// /home/u/.ssh`, and a later `--workdir P/sub` would bind the target read-write. A link
// is trusted only where no sandbox can write: directly in / (/home -> /data/home), in
// /var, /var/lib, /run or /home themselves, under a system tree, or directly in the
// caller's home. given is the path as the user wrote it.
func refusePlantedLinks(field, given string, guard reachGuard) error {
	current := "/"
	for _, name := range strings.Split(strings.TrimPrefix(filepath.Clean(absolute(given)), "/"), "/") {
		if name == "" {
			continue
		}
		next := filepath.Join(current, name)
		info, err := os.Lstat(next)
		if err != nil {
			return nil // resolution itself reports a missing path
		}
		if info.Mode()&os.ModeSymlink == 0 {
			current = next
			continue
		}
		if !linkParentTrusted(current, guard) {
			target, _ := os.Readlink(next)
			return &PolicyError{field, given, fmt.Sprintf("passes through the symlink %s -> %s, in a directory a sandboxed command could have written; if you mean its target, name the target itself", next, target)}
		}
		if current, err = filepath.EvalSymlinks(next); err != nil {
			return nil
		}
	}
	return nil
}

func linkParentTrusted(dir string, guard reachGuard) bool {
	if slices.Contains([]string{"/", "/var", "/var/lib", "/run", "/home"}, dir) || slices.Contains(guard.Home, dir) {
		return true
	}
	for _, tree := range systemTrees() {
		if within(tree, dir) {
			return true
		}
	}
	return false
}
