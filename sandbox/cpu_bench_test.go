package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// cpuacctRoot is the v1 cpuacct hierarchy (this machine kind is hybrid: no cpu
// controller on the v2 hierarchy).
const cpuacctRoot = "/sys/fs/cgroup/cpuacct"

// BenchmarkRunCPU is CPU per run for the whole sandbox (bwrap, its children, the command
// and the runner's own threads), read from a cpuacct cgroup the benchmark moves itself
// into, against raw bwrap with the same argv, at 1, 8 and 32 concurrent. wait4's rusage
// would miss the sandbox's processes (they are not the runner's children). Root only; the
// cgroup is removed and the process moved back after.
func BenchmarkRunCPU(b *testing.B) {
	bwrap := livetest.SystemBwrap(b)
	if os.Geteuid() != 0 {
		b.Skip("moves itself into a cpuacct cgroup: root only")
	}
	usage := intoCPUAccounting(b)
	policy, raw := rawBwrap(b, bwrap, livetest.TempDir(b))
	run := func() error {
		_, err := Run(context.Background(), policy, []string{"/bin/true"}, Options{Bwrap: bwrap})
		return err
	}
	for _, concurrent := range []int{1, 8, 32} {
		b.Run("concurrent="+strconv.Itoa(concurrent), func(b *testing.B) {
			const perWorker = 25
			measure := func(launch func() error) float64 {
				before := usage()
				var wg sync.WaitGroup
				for range concurrent {
					wg.Go(func() {
						for range perWorker {
							if err := launch(); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				return float64(usage()-before) / 1e6 / float64(concurrent*perWorker)
			}
			var runMS, rawMS float64
			for b.Loop() {
				rawMS += measure(raw)
				runMS += measure(run)
			}
			b.ReportMetric(runMS/float64(b.N), "run-cpu-ms")
			b.ReportMetric(rawMS/float64(b.N), "bwrap-cpu-ms")
			b.ReportMetric(runMS/rawMS, "cpu-ratio-vs-bwrap")
		})
	}
}

// intoCPUAccounting moves this process into a cpuacct cgroup of its own and returns a
// reader of its usage in nanoseconds; cleanup moves it back and removes the cgroup.
func intoCPUAccounting(b *testing.B) func() int64 {
	original := "/"
	if data, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for line := range strings.Lines(string(data)) {
			fields := strings.SplitN(strings.TrimSpace(line), ":", 3)
			if len(fields) == 3 && strings.Contains(","+fields[1]+",", ",cpuacct,") {
				original = fields[2]
			}
		}
	}
	dir := filepath.Join(cpuacctRoot, "bwrapkit-bench-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Skipf("no cpuacct cgroup to measure in: %v", err)
	}
	self := []byte(strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), self, 0o644); err != nil {
		os.Remove(dir)
		b.Skipf("cannot join %s: %v", dir, err)
	}
	b.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(cpuacctRoot, original, "cgroup.procs"), self, 0o644)
		_ = os.Remove(dir)
	})
	return func() int64 {
		data, err := os.ReadFile(filepath.Join(dir, "cpuacct.usage"))
		if err != nil {
			b.Fatal(err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
}
