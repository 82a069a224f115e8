package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// builtBinary is bwrapkit built once for the end-to-end tests, which run it as users
// do: a separate process with its own environment and exit status.
var builtBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bwrapkit-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Chmod(dir, 0o755) // the unprivileged run executes it too
	builtBinary = os.Getenv("BWRAPKIT_TEST_BINARY")
	if builtBinary == "" {
		// `make test-unprivileged` passes a prebuilt binary: nobody has no Go toolchain.
		builtBinary = filepath.Join(dir, "bwrapkit")
		build := exec.Command("go", "build", "-o", builtBinary, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building bwrapkit: %v\n%s", err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
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
