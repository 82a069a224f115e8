package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Host is the part of the host's layout the argv mirrors.
type Host struct {
	// Roots are /bin, /sbin, /lib, /lib32, /lib64 as they exist on the host: a
	// symlink (merged /usr) is recreated as the same symlink, a directory is bound.
	Roots []RootEntry
	// Etc are the allowlisted /etc entries that exist on the host.
	Etc []string
	// Env are the caller's locale and terminal variables that pass through.
	Env []string
	// Proc is the kernel surface of /proc to close, as this kernel has it.
	Proc ProcSurface
}

// ProcSurface are the /proc entries this kernel has that act on (or show) the whole
// host: runc's read-only and masked paths. Only existing entries are listed, since bwrap
// cannot mount over a path the fresh /proc lacks.
type ProcSurface struct {
	ReadOnly  []string // bound read-only
	MaskFiles []string // covered by /dev/null
	MaskDirs  []string // covered by an empty read-only tmpfs
}

// procReadOnly are runc's and Docker's read-only paths (runc's libcontainer/specconv
// defaults, moby's daemon/pkg/oci/defaults.go).
func procReadOnly() []string {
	return []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
}

// procMasked are runc's and Docker's masked /proc paths, and the root-only (0400) files
// that check no capability, so a root caller's command, uid 0 inside with every
// capability dropped, would read them: the physical page state of the whole machine
// (kpageflags, kpagecount, kpagecgroup: what Rowhammer and page-cache attacks steer by),
// the kernel allocator's state (slabinfo, pagetypeinfo: heap grooming; reading
// pagetypeinfo also holds each zone's lock with interrupts off) and kernel virtual
// addresses with their physical ones (vmallocinfo). docs/kernel-surface.md lists every
// /proc file checked.
func procMasked() []string {
	return []string{"/proc/acpi", "/proc/asound", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/sched_debug", "/proc/scsi", "/proc/timer_list", "/proc/timer_stats",
		"/proc/kpageflags", "/proc/kpagecount", "/proc/kpagecgroup", "/proc/slabinfo", "/proc/pagetypeinfo",
		"/proc/vmallocinfo"}
}

// RootEntry is one top-level system path.
type RootEntry struct {
	Path   string
	Target string // symlink target; empty for a directory
}

// systemRoots are bound read-only (or recreated as symlinks) besides /usr.
var systemRoots = []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64"}

// etcAllowlist is the narrow part of /etc a command needs to run and resolve names:
// the loader, alternatives, CA certificates, users and groups, time zone, hosts.
// Never /etc/shadow or the rest: secrets live there. (A fresh copy each call.)
func etcAllowlist() []string {
	return []string{
		"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
		"/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/passwd", "/etc/group",
		"/etc/nsswitch.conf", "/etc/localtime", "/etc/hosts",
	}
}

// etcNetwork is bound only with the host network.
func etcNetwork() []string { return []string{"/etc/resolv.conf"} }

// passEnvNames are the caller's variables (with LC_*) passed through when set: they
// shape output (locale, terminal, colour), say a CI job is running, or are the tool
// switches a user sets once in their shell and expects everywhere (no __pycache__ in
// the repository, unbuffered Python, Go's flags and toolchain choice, reproducible
// timestamps). None holds a secret or a path to one; a variable that may (a registry
// token, npm_config_*, GOPROXY with credentials, GIT_*) is never on this list: pass it
// with --pass-env. A fresh copy each call.
func passEnvNames() []string {
	return []string{"LANG", "TZ", "TERM", "COLORTERM", "CI", "NO_COLOR", "FORCE_COLOR",
		"PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONHASHSEED", "PYTHONWARNINGS", "PIP_DISABLE_PIP_VERSION_CHECK",
		"GOFLAGS", "GOTOOLCHAIN", "CGO_ENABLED", "GOAMD64", "GODEBUG",
		"NODE_ENV", "RUST_BACKTRACE", "CARGO_TERM_COLOR", "SOURCE_DATE_EPOCH"}
}

// scanHost reads the host's layout: lstat of a few system paths, and the caller's
// locale variables from environ. Cheap (about twenty stat calls), so it is not cached.
func scanHost(environ []string) Host {
	var host Host
	for _, path := range systemRoots {
		info, err := os.Lstat(path)
		if err != nil {
			continue
		}
		entry := RootEntry{Path: path}
		if info.Mode()&os.ModeSymlink != 0 {
			if entry.Target, err = os.Readlink(path); err != nil {
				continue
			}
		} else if !info.IsDir() {
			continue
		}
		host.Roots = append(host.Roots, entry)
	}
	for _, path := range append(etcAllowlist(), etcNetwork()...) {
		if _, err := os.Stat(path); err == nil {
			host.Etc = append(host.Etc, path)
		}
	}
	host.Env = localeEnv(environ)
	host.Proc = scanProc()
	return host
}

// scanProc lists the kernel-surface entries this kernel's /proc has.
func scanProc() ProcSurface {
	var proc ProcSurface
	for _, path := range procReadOnly() {
		if _, err := os.Lstat(path); err == nil {
			proc.ReadOnly = append(proc.ReadOnly, path)
		}
	}
	for _, path := range procMasked() {
		info, err := os.Lstat(path)
		switch {
		case err != nil:
		case info.IsDir():
			proc.MaskDirs = append(proc.MaskDirs, path)
		default:
			proc.MaskFiles = append(proc.MaskFiles, path)
		}
	}
	return proc
}

// localeEnv picks LC_* and passEnvNames from the caller's environment, in its order.
func localeEnv(environ []string) []string {
	var env []string
	for _, entry := range environ {
		name, value, _ := strings.Cut(entry, "=")
		if value != "" && (strings.HasPrefix(name, "LC_") || slices.Contains(passEnvNames(), name)) {
			env = append(env, entry)
		}
	}
	return env
}

func isNetworkEtc(path string) bool {
	for _, candidate := range etcNetwork() {
		if filepath.Clean(path) == candidate {
			return true
		}
	}
	return false
}
