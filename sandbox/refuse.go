package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
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

// Guard is what the caller must keep out of a sandbox's reach for writing, besides the
// fixed rules: the caller's home and bwrapkit's own trusted state (its home with the
// managed bwrap, the probe cache, the bwrap in use), all resolved.
type Guard struct {
	Home    []string // the caller's home directory ($HOME and the passwd entry)
	Trusted []string // a workdir may enclose none of these nor lie inside one
}

// RefuseWritable says why a resolved path may not be bound read-write, or nil. field and
// given name the flag and the path as the user wrote it, for the message.
func RefuseWritable(field, given, real string, guard Guard) error {
	for _, tree := range systemTrees() {
		if within(tree, real) {
			return &PolicyError{field, describe(given, real), fmt.Sprintf("is at or under the system directory %s, which is never writable inside; choose a project directory", tree)}
		}
	}
	if slices.Contains(sharedRoots(), real) {
		return &PolicyError{field, describe(given, real), fmt.Sprintf("is %s itself, shared by every user or service; choose a directory below it", real)}
	}
	for _, home := range guard.Home {
		if real == home {
			return &PolicyError{field, describe(given, real), "is your home directory, which holds your keys and tool configuration; choose a project directory below it"}
		}
	}
	for _, trusted := range guard.Trusted {
		if trusted == "" {
			continue
		}
		if within(real, trusted) || within(trusted, real) {
			return &PolicyError{field, describe(given, real), fmt.Sprintf("encloses or lies inside %s, bwrapkit's own state (its home, probe cache or the bwrap in use), which a command must never be able to replace; choose another directory or move that state (--home, XDG_CACHE_HOME, --bwrap)", trusted)}
		}
	}
	return nil
}

// RefuseReadOnly says why a resolved path may not be bound even read-only, or nil.
func RefuseReadOnly(field, given, real string) error {
	if within("/proc", real) || slices.Contains(readOnlyRefused(), real) {
		return &PolicyError{field, describe(given, real), "would show the host itself (its whole file system, processes, kernel objects or devices) inside; bind the specific directory the command needs"}
	}
	return nil
}

// describe names a path as given and, when different, as resolved.
func describe(given, real string) string {
	if given == real || given == "" {
		return real
	}
	return fmt.Sprintf("%s (%s)", given, real)
}

// within reports whether path is dir or below it.
func within(dir, path string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

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
