package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// TestLiveRunIsLongLivedSafe: a service that embeds the runner makes thousands of runs in
// one process, under the default limit of 1,024 descriptors. Nothing may grow per run:
// one leaked descriptor per run ends every run from about the 1,000th with 125.
func TestLiveRunIsLongLivedSafe(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	const runs, concurrent, warmUp = 5000, 4, 200
	lowerOpenFiles(t, 1024)
	policy, err := NewPolicy(Request{Workdir: livetest.TempDir(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if policy.Features, err = Probe(context.Background(), bwrap); err != nil {
		t.Fatal(err)
	}
	batch := func(n int) {
		t.Helper()
		var wg sync.WaitGroup
		failures := make(chan string, concurrent)
		for worker := range concurrent {
			wg.Go(func() {
				for i := worker; i < n; i += concurrent {
					result, err := Run(context.Background(), policy, []string{"/bin/true"}, Options{Bwrap: bwrap})
					if err != nil || result.ExitCode != 0 {
						failures <- "run " + strconv.Itoa(i) + ": " + errText(err)
						return
					}
				}
			})
		}
		wg.Wait()
		close(failures)
		for failure := range failures {
			t.Fatal(failure)
		}
	}
	batch(warmUp)
	before := usage(t)
	batch(runs)
	after := settledUsage(t, before)
	t.Logf("after %d runs: %+v; after %d more: %+v", warmUp, before, runs, after)
	if after.fds > before.fds {
		t.Errorf("descriptors grew from %d to %d over %d runs", before.fds, after.fds, runs)
	}
	if after.goroutines > before.goroutines {
		t.Errorf("goroutines grew from %d to %d over %d runs", before.goroutines, after.goroutines, runs)
	}
	// Idle threads stay in Go's pool; the pool is bounded by the concurrency, not the runs.
	if after.threads > before.threads+concurrent {
		t.Errorf("threads grew from %d to %d over %d runs", before.threads, after.threads, runs)
	}
}

// lowerOpenFiles sets the soft RLIMIT_NOFILE for the test (Go raises it to the hard limit
// at start-up), and puts it back after.
func lowerOpenFiles(t *testing.T, limit uint64) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	lowered := old
	lowered.Cur = min(limit, old.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}

type processUsage struct{ fds, goroutines, threads int }

func usage(t *testing.T) processUsage {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	threads := 0
	for line := range strings.Lines(string(status)) {
		if value, found := strings.CutPrefix(line, "Threads:"); found {
			threads, _ = strconv.Atoi(strings.TrimSpace(value))
		}
	}
	return processUsage{fds: len(fds), goroutines: runtime.NumGoroutine(), threads: threads}
}

// settledUsage is usage once the last run's goroutines (its status reader, its wait) had
// a moment to end: the runs are over, so this is a bound on the test, not on a run.
func settledUsage(t *testing.T, want processUsage) processUsage {
	t.Helper()
	var now processUsage
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if now = usage(t); now.fds <= want.fds && now.goroutines <= want.goroutines {
			break
		}
	}
	return now
}

// TestLiveLoadNoneRefused is a load run for a person to start once and read (it asserts
// no timing): BWRAPKIT_TEST_LOAD=1, 4,000 runs at 50 concurrent, none may be refused.
func TestLiveLoadNoneRefused(t *testing.T) {
	if os.Getenv("BWRAPKIT_TEST_LOAD") != "1" {
		t.Skip("a load run: BWRAPKIT_TEST_LOAD=1 to start it")
	}
	bwrap := livetest.SystemBwrap(t)
	runs, concurrent := envInt("BWRAPKIT_TEST_LOAD_RUNS", 4000), envInt("BWRAPKIT_TEST_LOAD_CONCURRENT", 50)
	policy, err := NewPolicy(Request{Workdir: livetest.TempDir(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if policy.Features, err = Probe(context.Background(), bwrap); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	refused := map[string]int{}
	began := time.Now()
	var wg sync.WaitGroup
	for worker := range concurrent {
		wg.Go(func() {
			for i := worker; i < runs; i += concurrent {
				result, err := Run(context.Background(), policy, []string{"/bin/true"}, Options{Bwrap: bwrap})
				if err != nil || result.ExitCode != 0 {
					mu.Lock()
					refused[errText(err)]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d runs at %d concurrent in %v; refused: %v", runs, concurrent, time.Since(began), refused)
	if len(refused) > 0 {
		t.Errorf("runs refused under load: %v", refused)
	}
}

func envInt(name string, fallback int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return fallback
}

// TestLiveSilentKeeperIsNamedBeforeTheLaunchBound: a keeper that stays alive and never
// answers (a bwrapkit-helper of another build that waits on its input) is refused as the
// keeper, before the launch's own bound ends the run as a slow launch: a caller such as
// the doctor tries a slow launch again for twice as long, and would name the wrong cause.
func TestLiveSilentKeeperIsNamedBeforeTheLaunchBound(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		policy, err := NewPolicy(Request{Workdir: livetest.TempDir(t)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		silent := filepath.Join(livetest.TempDir(t), "silent-keeper")
		if err := livetest.WriteProgram(silent, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		marker := filepath.Join(policy.Workdir, "ran")
		_, err = Run(context.Background(), policy, []string{"/bin/touch", marker}, Options{Bwrap: bwrap, Keeper: silent, LaunchTimeout: 2 * time.Second})
		var unavailable *UnavailableError
		if !errors.As(err, &unavailable) || unavailable.Reason != ReasonHardening || !strings.Contains(err.Error(), "keeper ("+silent+")") {
			t.Errorf("a keeper that never answers, launch bound 2s: %v, want a hardening refusal naming the keeper, not a launch timeout", err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Error("the command ran although its keeper never said it holds the sandbox")
		}
	})
}

func TestConfirmBound(t *testing.T) {
	for _, c := range []struct{ left, want time.Duration }{
		{2 * time.Second, 2*time.Second - confirmMargin}, // ends just before the launch's
		{time.Hour, keeperConfirmBound},                  // never longer than its own bound
		{confirmMargin, keeperConfirmBound},              // too close: the launch's bound decides
		{-time.Second, keeperConfirmBound},
	} {
		if got := confirmBound(c.left); got != c.want {
			t.Errorf("confirmBound(%v) = %v, want %v", c.left, got, c.want)
		}
	}
}

// TestLiveKeptRunSaysSo: a run with a keeper says so, one without says it is unkept, a
// keeper that cannot start refuses the run before bwrap, and one that starts but never
// says it holds the sandbox (it died early, or is a keeper of another build) refuses it
// before the command: never an unkept run that was asked to be kept.
func TestLiveKeptRunSaysSo(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		policy, err := NewPolicy(Request{Workdir: livetest.TempDir(t)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			keeper string
			want   Lifetime
		}{{testExecutable(t), LifetimeKeeper}, {"", LifetimeUnkept}} {
			result, err := Run(context.Background(), policy, []string{"/bin/true"}, Options{Bwrap: bwrap, Keeper: tc.keeper})
			if err != nil || result.ExitCode != 0 || result.Lifetime != tc.want {
				t.Errorf("keeper %q: %+v %v, want lifetime %s", tc.keeper, result, err, tc.want)
			}
		}
		marker := filepath.Join(policy.Workdir, "ran")
		_, err = Run(context.Background(), policy, []string{"/bin/touch", marker}, Options{Bwrap: bwrap, Keeper: "/nonexistent/keeper"})
		var unavailable *UnavailableError
		if !errors.As(err, &unavailable) || unavailable.Reason != ReasonHardening {
			t.Errorf("a keeper that cannot start: %v, want a hardening refusal", err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Error("the command ran although its keeper could not start")
		}
		silent := filepath.Join(livetest.TempDir(t), "silent-keeper")
		if err := livetest.WriteProgram(silent, []byte("#!/bin/sh\nsleep 0.3\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, err = Run(context.Background(), policy, []string{"/bin/touch", marker}, Options{Bwrap: bwrap, Keeper: silent})
		// Named, with what to do: a bwrapkit-helper of another build beside bwrapkit is the
		// likely cause, and the doctor that meets it has nothing better to say.
		if !errors.As(err, &unavailable) || unavailable.Reason != ReasonHardening || !strings.Contains(err.Error(), "keeper ("+silent+")") || !strings.Contains(err.Error(), "replace it") {
			t.Errorf("a keeper that never confirms: %v, want a hardening refusal naming the keeper and the remedy", err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Error("the command ran although its keeper never said it holds the sandbox")
		}
	})
}
