package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/sandbox/lifetime"
)

// helperEnv marks the test binary re-executed inside the sandbox as the probe, so no
// shell or interpreter is assumed there (the standard library's helper-process pattern).
const helperEnv = "BWRAPKIT_SANDBOX_HELPER"

func TestMain(m *testing.M) {
	lifetime.KeeperMain() // the test binary is the keeper of its own runs
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperMain(os.Args[1:]))
	}
	// Tests must not write into the user's real cache.
	cacheDir, _ := os.MkdirTemp("", "bwrapkit-probe-cache-")
	os.Setenv("XDG_CACHE_HOME", cacheDir) // before the process's prober is first made
	code := m.Run()
	os.RemoveAll(cacheDir)
	os.Exit(code)
}

// helperMain performs one action inside the sandbox and prints what it observed.
func helperMain(args []string) int {
	switch args[0] {
	case "exit":
		code, _ := strconv.Atoi(args[1])
		return code
	case "session-keyring": // the serial of this process's session keyring, or the error
		id, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, false)
		if err != nil {
			fmt.Println(errText(err))
			return 1
		}
		fmt.Println(id)
	case "kill-self":
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		time.Sleep(time.Minute)
	case "write": // write PATH...: one line per path, "ok" or the error
		for _, path := range args[1:] {
			err := os.WriteFile(path, []byte("written inside"), 0o644)
			fmt.Printf("%s: %s\n", path, errText(err))
		}
	case "read":
		for _, path := range args[1:] {
			_, err := os.ReadFile(path)
			fmt.Printf("%s: %s\n", path, errText(err))
		}
	case "env":
		for _, entry := range os.Environ() {
			fmt.Println(entry)
		}
	case "connect":
		conn, err := net.DialTimeout("tcp", args[1], 2*time.Second)
		if err == nil {
			conn.Close()
		}
		fmt.Println(errText(err))
	case "procs":
		entries, _ := os.ReadDir("/proc")
		for _, entry := range entries {
			if _, err := strconv.Atoi(entry.Name()); err == nil {
				fmt.Println(entry.Name())
			}
		}
	case "fds": // the descriptors this process holds, but the one ReadDir itself opens
		entries, _ := os.ReadDir("/proc/self/fd")
		for _, entry := range entries {
			// ReadDir's own descriptor is closed by now: its link no longer resolves.
			target, err := os.Readlink(filepath.Join("/proc/self/fd", entry.Name()))
			if err == nil && !strings.HasPrefix(target, "/proc/") {
				fmt.Printf("%s: %s\n", entry.Name(), target)
			}
		}
	case "status":
		data, _ := os.ReadFile("/proc/self/status")
		fmt.Print(string(data))
	case "escape": // escape MARKER: a grandchild in a session of its own, then wait
		grandchild := exec.Command(os.Args[0], "hold", args[1])
		grandchild.Env = os.Environ()
		grandchild.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := grandchild.Start(); err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Println("escaped")
		time.Sleep(time.Hour)
	case "hold":
		time.Sleep(time.Hour)
	case "unshare-user":
		fmt.Println(errText(syscall.Unshare(syscall.CLONE_NEWUSER)))
	default:
		if code, ok := attackHelper(args); ok {
			return code
		}
		fmt.Fprintf(os.Stderr, "unknown helper action %q\n", args[0])
		return 2
	}
	return 0
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

// outputLines maps "key: value" lines to a map.
func outputLines(out string) map[string]string {
	lines := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		key, value, _ := strings.Cut(line, ": ")
		lines[key] = value
	}
	return lines
}

// testExecutable is the test binary, bound read-only so it can run inside.
func testExecutable(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		t.Fatal(err)
	}
	return real
}
