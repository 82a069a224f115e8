package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/netproxy/bridge"
	"github.com/bwrapkit/bwrapkit/sandbox"
	"github.com/bwrapkit/bwrapkit/sandbox/lifetime"
)

// builtBinary is bwrapkit built once for the end-to-end tests, which run it as users
// do: a separate process with its own environment and exit status. builtHelper is
// bwrapkit-helper beside it, as make build and the release put it, so the tests' runs
// start it as their keeper and bridge (in-process runs have this test binary instead).
var builtBinary, builtHelper string

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.BridgeCommand {
		// In-process runs (runRun called by a test) have this binary as their bridge.
		os.Exit(bridge.Main(os.Args[2:], os.Stderr))
	}
	lifetime.KeeperMain() // and their keeper
	dir, err := os.MkdirTemp("", "bwrapkit-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Chmod(dir, 0o755) // the unprivileged run executes it too
	builtBinary = os.Getenv("BWRAPKIT_TEST_BINARY")
	if builtBinary == "" && slices.Contains(os.Args, "-test.fuzzworker") {
		// A fuzz worker runs only the in-process fuzz target: no binary to build, and
		// the workers would each build it while the coordinator waits on them.
		builtBinary = "/nonexistent/bwrapkit-fuzz-worker"
	}
	if builtBinary == "" {
		// `make test-unprivileged` passes a prebuilt binary: nobody has no Go toolchain.
		builtBinary = filepath.Join(dir, "bwrapkit")
		for target, pkg := range map[string]string{builtBinary: ".", filepath.Join(dir, helperName): "../bwrapkit-helper"} {
			build := exec.Command("go", "build", "-o", target, pkg)
			build.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := build.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "building %s: %v\n%s", pkg, err, out)
				os.RemoveAll(dir)
				os.Exit(1)
			}
		}
	}
	builtHelper = filepath.Join(filepath.Dir(builtBinary), helperName)
	// Tests must not write into the user's real cache.
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache")) // before the process's prober is first made
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// invocation is one in-process run of the command line with captured streams.
type invocation struct {
	args    []string
	environ []string
	stdin   string
}

type outcome struct {
	status int
	stdout string
	stderr string
}

func (i invocation) run(t *testing.T) outcome {
	t.Helper()
	var stdout, stderr bytes.Buffer
	environ := i.environ
	if environ == nil {
		environ = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LANG=C.UTF-8"}
	}
	s := streams{
		In: bytes.NewBufferString(i.stdin), Out: &stdout, Err: &stderr,
		Getenv:  getenvFrom(environ),
		Environ: func() []string { return environ },
	}
	status := execute(context.Background(), i.args, s)
	return outcome{status, stdout.String(), stderr.String()}
}

func getenvFrom(environ []string) func(string) string {
	return func(name string) string {
		for index := len(environ) - 1; index >= 0; index-- {
			if len(environ[index]) > len(name) && environ[index][:len(name)+1] == name+"=" {
				return environ[index][len(name)+1:]
			}
		}
		return ""
	}
}

func TestStartLimitProblem(t *testing.T) {
	for _, tc := range []struct {
		files, procs uint64
		root         bool
		want         string // in the problem; "" for none
	}{
		{1024, 4096, false, ""},
		{minOpenFiles, minProcesses, false, ""},
		{minOpenFiles - 1, 4096, false, "ulimit -n"},
		{5, 4096, true, "ulimit -n"},
		{1024, minProcesses - 1, false, "ulimit -u"},
		{1024, 3, true, ""}, // root is not bound by RLIMIT_NPROC
	} {
		got := startLimitProblem(tc.files, tc.procs, tc.root)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("files %d procs %d root %v: %q, want %q", tc.files, tc.procs, tc.root, got, tc.want)
		}
	}
}
