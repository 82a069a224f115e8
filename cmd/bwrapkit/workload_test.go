package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// Real toolchains on real (small) projects, offline, as an agent or CI job runs them:
// each project is a fresh git repository copied from testdata/workloads, and the
// examples/policies files are the policies used.

// workload copies testdata/workloads/name into a fresh, committed git repository.
func workload(t *testing.T, name string) string {
	t.Helper()
	repo := livetest.TempDir(t)
	src := filepath.Join(livetest.RepoRoot(), "testdata", "workloads", name)
	if out, err := exec.Command("cp", "-r", src+"/.", repo).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v %s", src, err, out)
	}
	if _, err := exec.LookPath("git"); err == nil {
		for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "workload"}} {
			if out, err := hostGit(repo, args...).CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v %s", args, err, out)
			}
		}
	}
	return repo
}

// forWorkloadBwraps runs a workload on Debian's bwrap (direct mode, its fallback) and on
// the pinned 0.12.0 (the transactional default), with no flag for the mode either way.
func forWorkloadBwraps(t *testing.T, test func(t *testing.T, bwrap string)) {
	for _, bwrap := range livetest.Bwraps(t) {
		if bwrap.Name == "codex" {
			continue // the transactional mode is the same on it; the attack tests cover it
		}
		t.Run(bwrap.Name, func(t *testing.T) {
			if hasOverlay(bwrap.Path) {
				// The default must be the transactional mode here, not a quiet fallback.
				got := binaryRunWithin(t, workloadBound, workloadEnv(t, bwrap.Path), "run", "--workdir-mode", "transactional", "--workdir", livetest.TempDir(t), "--", "true")
				if got.status != 0 {
					t.Fatalf("the transactional mode cannot be built with %s: %d %s", bwrap.Path, got.status, got.stderr)
				}
			}
			test(t, bwrap.Path)
		})
	}
}

func policyExample(name string) string {
	return filepath.Join(livetest.RepoRoot(), "examples", "policies", name+".json")
}

// workloadEnv is a caller's environment with its cache (where the project HOMEs live)
// kept for the whole test, so a second run can find its caches warm.
func workloadEnv(t *testing.T, bwrap string) []string {
	environ, _ := attackEnv(t, bwrap)
	return environ // bwrapkit clears the rest; no --net: offline
}

func assertClean(t *testing.T, repo string) {
	t.Helper()
	out, err := hostGit(repo, "status", "--porcelain", "--ignored").Output()
	if err != nil || len(out) != 0 {
		t.Errorf("the repository is not clean after the runs: %v\n%s", err, out)
	}
}

// workloadBound is each workload run's bound: its first build is cold.
const workloadBound = 5 * time.Minute

func TestWorkloadGoBuildAndTest(t *testing.T) {
	forWorkloadBwraps(t, func(t *testing.T, bwrap string) {
		if _, err := os.Stat(filepath.Join(goBin, "go")); err != nil {
			livetest.Skip(t, "no Go at "+goBin)
		}
		repo := workload(t, "gomod")
		environ := workloadEnv(t, bwrap)
		run := func(args ...string) outcome {
			return binaryRunWithin(t, workloadBound, environ, append([]string{"run", "--policy", policyExample("go"), "--workdir", repo, "--"}, args...)...)
		}
		if got := run("go", "build", "./..."); got.status != 0 {
			t.Fatalf("go build: %d %s", got.status, got.stderr)
		}
		first := run("go", "test", "./...")
		second := run("go", "test", "./...")
		if first.status != 0 || second.status != 0 {
			t.Fatalf("go test: %d %s / %d %s", first.status, first.stderr, second.status, second.stderr)
		}
		if strings.Contains(first.stdout, "(cached)") || !strings.Contains(second.stdout, "(cached)") {
			t.Errorf("the second run's cache is not warm:\nfirst %s\nsecond %s", first.stdout, second.stdout)
		}
		assertClean(t, repo)
	})
}

func TestWorkloadPytest(t *testing.T) {
	forWorkloadBwraps(t, func(t *testing.T, bwrap string) {
		if err := exec.Command("/usr/bin/python3", "-m", "pytest", "--version").Run(); err != nil {
			livetest.Skip(t, "no pytest for /usr/bin/python3 (Debian's python3-pytest)")
		}
		repo := workload(t, "pytest")
		got := binaryRunWithin(t, workloadBound, workloadEnv(t, bwrap), "run", "--policy", policyExample("python"), "--workdir", repo, "--",
			"python3", "-m", "pytest", "-q", "-p", "no:cacheprovider")
		if got.status != 0 || !strings.Contains(got.stdout, "2 passed") {
			t.Fatalf("pytest: %d %s %s", got.status, got.stdout, got.stderr)
		}
		assertClean(t, repo)
	})
}

func TestWorkloadMakeAndCC(t *testing.T) {
	forWorkloadBwraps(t, func(t *testing.T, bwrap string) {
		for _, tool := range []string{"make", "cc"} {
			if _, err := exec.LookPath(tool); err != nil {
				livetest.Skip(t, "no "+tool)
			}
		}
		repo := workload(t, "c")
		environ := workloadEnv(t, bwrap)
		if got := binaryRunWithin(t, workloadBound, environ, "run", "--workdir", repo, "--", "make", "check"); got.status != 0 {
			t.Fatalf("make check: %d %s %s", got.status, got.stdout, got.stderr)
		}
		if _, err := os.Stat(filepath.Join(repo, "hello")); err != nil {
			t.Errorf("the build did not reach the workdir: %v", err)
		}
		if got := binaryRunWithin(t, workloadBound, environ, "run", "--workdir", repo, "--", "make", "clean"); got.status != 0 {
			t.Fatalf("make clean: %d %s", got.status, got.stderr)
		}
		assertClean(t, repo)
	})
}

func TestWorkloadNodeTest(t *testing.T) {
	forWorkloadBwraps(t, func(t *testing.T, bwrap string) {
		node, err := exec.LookPath("node")
		if err != nil {
			livetest.Skip(t, "no node (Debian's nodejs)")
		}
		repo := workload(t, "node")
		args := []string{"run", "--policy", policyExample("node"), "--workdir", repo}
		if dir := filepath.Dir(node); dir != "/usr/bin" && dir != "/bin" && dir != "/usr/local/bin" {
			args = append(args, "--path", dir)
		}
		got := binaryRunWithin(t, workloadBound, workloadEnv(t, bwrap), append(args, "--", "node", "--test")...)
		if got.status != 0 || !strings.Contains(got.stdout, "pass 1") {
			t.Fatalf("node --test: %d %s %s", got.status, got.stdout, got.stderr)
		}
		assertClean(t, repo)
	})
}

// TestPolicyExamplesParseAndPrint: every shipped example is a valid policy, and flags
// add to it.
func TestPolicyExamplesParseAndPrint(t *testing.T) {
	workdir := livetest.TempDir(t)
	for _, name := range []string{"go", "node", "python"} {
		got := invocation{args: []string{"run", "--policy", policyExample(name), "--workdir", workdir, "--env", "EXTRA=1", "--print-policy"}}.run(t)
		if got.status != 0 || !strings.Contains(got.stdout, `"schema": "bwrapkit.policy/v1"`) || !strings.Contains(got.stdout, `"EXTRA=1"`) || !strings.Contains(got.stdout, `"timeout": "30m0s"`) {
			t.Errorf("%s: %d %s %s", name, got.status, got.stdout, got.stderr)
		}
	}
}

// TestAttackPolicyFileIsNeverFollowedOrBlockedOn: a policy file that is a FIFO (nobody
// writing) must not hang the run, and one behind a symlink is refused, not followed.
func TestAttackPolicyFileIsNeverFollowedOrBlockedOn(t *testing.T) {
	dir := t.TempDir()
	fifo, link := filepath.Join(dir, "fifo.json"), filepath.Join(dir, "link.json")
	if err := exec.Command("mkfifo", fifo).Run(); err != nil {
		t.Fatal(err)
	}
	os.Symlink(policyExample("go"), link)
	marker := filepath.Join(dir, "ran")
	for _, path := range []string{fifo, link} {
		got := invocation{args: []string{"run", "--policy", path, "--workdir", livetest.TempDir(t), "--", "touch", marker}}.run(t)
		if got.status != exitUsage || !strings.Contains(got.stderr, path) {
			t.Errorf("%s: status %d %q", path, got.status, got.stderr)
		}
		environ := []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "BWRAPKIT_POLICY=" + path}
		if got := (invocation{args: []string{"run", "--print-policy"}, environ: environ}).run(t); got.status != exitUsage {
			t.Errorf("BWRAPKIT_POLICY=%s: status %d %q", path, got.status, got.stderr)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the command ran")
	}
}
