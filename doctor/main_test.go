package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/render"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/locate"
)

// helperVar makes the test binary a helper process (the standard library's
// GO_WANT_HELPER_PROCESS pattern): "probe" runs the self-test probe inside the sandbox,
// "doctor" runs a whole doctor and prints its JSON report (for the nested-refusal test).
const helperVar = "BWRAPKIT_DOCTOR_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperVar) {
	case "probe":
		os.Exit(probe.Run(os.Args[1:], os.Stdout, os.Stderr))
	case "doctor":
		os.Exit(helperDoctor())
	}
	os.Exit(runWithPrivateCache(m))
}

// runWithPrivateCache runs the tests with XDG_CACHE_HOME in a directory of their own,
// removed after: each live doctor makes project HOMEs for its self-tests, and the tests
// must not leave hundreds of them in the caller's real cache (where every later homes
// check would count them).
func runWithPrivateCache(m *testing.M) int {
	if os.Getenv("XDG_CACHE_HOME") != "" {
		return m.Run() // the caller chose one
	}
	base := os.Getenv(livetest.ScratchEnv)
	if base == "" {
		base = filepath.Join(livetest.RepoRoot(), ".cache", "scratch")
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return m.Run()
	}
	cache, err := os.MkdirTemp(base, "doctor-cache-")
	if err != nil {
		return m.Run()
	}
	defer os.RemoveAll(cache)
	os.Setenv("XDG_CACHE_HOME", cache)
	defer os.Unsetenv("XDG_CACHE_HOME")
	return m.Run()
}

func helperDoctor() int {
	prober, err := selfProbe()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	got, err := Run(context.Background(), Config{
		Query: locate.Query{PATH: os.Getenv("PATH"), Home: os.Getenv("BWRAPKIT_HOME")},
		Probe: prober,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	if err := render.JSON(os.Stdout, got); err != nil {
		return 3
	}
	if !got.Healthy() {
		return 1
	}
	return 0
}

// selfProbe is this test binary as the probe.
func selfProbe() (probe.Command, error) {
	executable, err := os.Executable()
	if err == nil {
		executable, err = filepath.EvalSymlinks(executable)
	}
	return probe.Command{Argv: []string{executable}, Env: []string{helperVar + "=probe"}}, err
}

// systemBwrap is the bwrap on PATH, on a host where user namespaces work; the test skips
// only when either is truly absent.
func systemBwrap(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("bwrap")
	if err != nil {
		livetest.Skip(t, "no bwrap on PATH (apt-get install bubblewrap)")
	}
	prober, err := selfProbe()
	if err != nil {
		t.Fatal(err)
	}
	if errno := tryUserNamespace(prober); errno != 0 {
		livetest.Skip(t, "this host gives no user namespaces: "+errno.Error())
	}
	return path
}

// cachedBwrap is one of the static bwraps scripts/get-test-bwraps.sh puts in .cache/bwraps.
func cachedBwrap(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(livetest.CachedBwraps(), name)
	if _, err := os.Stat(path); err != nil {
		livetest.Skip(t, path+" is missing: run scripts/get-test-bwraps.sh")
	}
	// The cache may be a symlink (a worktree shares it); reports name the resolved path.
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// liveConfig runs the doctor on bwrap with this test binary as the probe.
func liveConfig(t testing.TB, bwrap string) Config {
	t.Helper()
	prober, err := selfProbe()
	if err != nil {
		t.Fatal(err)
	}
	// Outside /tmp, where the workdir's parent is on the sandbox's read-only root: writes
	// there must fail, not merely vanish with a private tmpfs.
	return Config{Query: locate.Query{Flag: bwrap}, Probe: prober, TempDir: livetest.TempDir(t), ToolVersion: "test"}
}

func checkByID(t testing.TB, got report.Report, id string) report.Check {
	t.Helper()
	for _, check := range got.Checks {
		if check.ID == id {
			return check
		}
	}
	t.Fatalf("no check %s in the report", id)
	return report.Check{}
}

func dump(got report.Report) string {
	data, _ := json.MarshalIndent(got.Checks, "", "  ")
	return string(data)
}
