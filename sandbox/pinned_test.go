package sandbox

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// The lists below are written here, from their sources, and not taken from the code
// they check: a shortened list in the code must make these tests fail, not agree with
// them. (The masked /proc entries and the syscall list are pinned by their own tests.)

// runcReadOnlyPaths is runc's default readonlyPaths (libcontainer/specconv, Example()):
// the parts of /proc that act on the whole host, bound read-only.
var runcReadOnlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}

// passedEnvironment is every variable the command gets: bwrapkit's own (PATH, HOME,
// TMPDIR, USER, LOGNAME), the caller's locale (LANG, LC_*, TZ) and terminal (TERM,
// COLORTERM, NO_COLOR, FORCE_COLOR) and CI; nothing else of the caller's.
var passedEnvironment = []string{"PATH", "HOME", "TMPDIR", "USER", "LOGNAME",
	"LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "CI"}

// TestPinnedReadOnlyProc: every entry of runc's list that this kernel has is bound
// read-only over the fresh /proc (a root command could otherwise write host sysctls).
func TestPinnedReadOnlyProc(t *testing.T) {
	if _, err := os.Lstat("/proc/sys"); err != nil {
		t.Fatalf("precondition: this kernel's /proc has /proc/sys: %v", err)
	}
	argv, err := Argv("/usr/bin/bwrap", Policy{Workdir: "/src/app", Host: scanHost(nil)}, []string{"true"})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range runcReadOnlyPaths {
		if _, err := os.Lstat(path); err != nil {
			continue // bwrap cannot bind what the fresh /proc lacks
		}
		if !hasTriple(argv, "--ro-bind", path, path) {
			t.Errorf("%s is not bound read-only over the fresh /proc", path)
		}
	}
	procAt := slices.Index(argv, "--proc")
	for _, path := range runcReadOnlyPaths {
		if at := tripleIndex(argv, "--ro-bind", path, path); at >= 0 && at < procAt {
			t.Errorf("%s is bound before --proc mounts the fresh /proc, which would cover it", path)
		}
	}
}

// TestPinnedEnvironment: a caller environment full of secrets and session state passes
// exactly the pinned names into the sandbox, and bwrap starts from an empty environment.
func TestPinnedEnvironment(t *testing.T) {
	caller := []string{
		"LANG=C.UTF-8", "LC_ALL=C", "LC_CTYPE=C.UTF-8", "TZ=UTC", "TERM=xterm", "COLORTERM=truecolor",
		"NO_COLOR=1", "FORCE_COLOR=1", "CI=true",
		"HOME=/root", "PATH=/evil:/usr/bin", "USER=root", "SSH_AUTH_SOCK=/run/ssh.sock",
		"AWS_SECRET_ACCESS_KEY=secret", "GITHUB_TOKEN=secret", "LD_PRELOAD=/evil.so", "BASH_ENV=/evil",
		"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/bus", "XDG_RUNTIME_DIR=/run/user/0", "DISPLAY=:0",
		"GIT_DIR=/elsewhere", "PYTHONPATH=/evil", "http_proxy=http://proxy",
	}
	policy := Policy{Workdir: "/src/app", User: "alice", Host: scanHost(caller)}
	argv, err := Argv("/usr/bin/bwrap", policy, []string{"true"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(argv, "--clearenv") {
		t.Fatal("bwrap is not told to clear the environment")
	}
	var got []string
	for i := 0; i+2 < len(argv); i++ {
		if argv[i] == "--setenv" {
			got = append(got, argv[i+1])
			i += 2
		}
	}
	if !sameSet(got, passedEnvironment) {
		t.Fatalf("the command's environment is %v, want exactly %v", got, passedEnvironment)
	}
	for _, entry := range policy.Environment() {
		if strings.Contains(entry, "secret") || strings.Contains(entry, "/evil") {
			t.Errorf("a caller's value reached the command: %s", entry)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b)) && len(a) == len(b)
}

func hasTriple(argv []string, option, a, b string) bool { return tripleIndex(argv, option, a, b) >= 0 }

func tripleIndex(argv []string, option, a, b string) int {
	for i := 0; i+2 < len(argv); i++ {
		if argv[i] == option && argv[i+1] == a && argv[i+2] == b {
			return i
		}
	}
	return -1
}
