package doctor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/sandbox"
)

// BenchmarkDoctor reports a whole doctor run (every check, every self-test) in units of one
// raw bwrap launch of /bin/true with the same full-isolation argv, both measured here, so
// the figure means the same on a fast and a slow machine; and the CPU time of the doctor
// (user and system, of this process and every process it started: bwrap, the probe), in
// milliseconds. Goals (issue 9): at most 8 launches and 20 ms. The probe here is this test
// binary; `make bench` measures the built bwrapkit the same way with benchcmp.
func BenchmarkDoctor(b *testing.B) {
	bwrap := systemBwrap(b)
	cfg := liveConfig(b, bwrap)
	launch, filter := rawLaunch(b, bwrap, cfg.TempDir)
	var doctorTime, launchTime, doctorCPU, doctorSelf time.Duration
	b.ResetTimer()
	for b.Loop() {
		began := time.Now()
		raw, file := launch(filter)
		err := raw.Run()
		file.Close()
		if err != nil {
			b.Fatal(err)
		}
		launchTime += time.Since(began)

		began, cpu, self := time.Now(), cpuTime(), selfTime()
		got, err := Run(context.Background(), cfg)
		doctorTime += time.Since(began)
		doctorCPU += cpuTime() - cpu
		doctorSelf += selfTime() - self
		if err != nil || !got.Healthy() {
			b.Fatalf("unhealthy: %v\n%s", err, dump(got))
		}
	}
	b.ReportMetric(float64(doctorTime)/float64(launchTime), "launches/doctor")
	b.ReportMetric(float64(doctorCPU.Microseconds())/1000/float64(b.N), "ms-CPU/doctor")
	b.ReportMetric(float64(doctorSelf.Microseconds())/1000/float64(b.N), "ms-CPU-in-process/doctor")
}

// selfTime is the user and system time of this process alone.
func selfTime() time.Duration {
	var self syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano())
}

// cpuTime is the user and system time of this process and its waited-for children.
func cpuTime() time.Duration {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	total := func(u syscall.Rusage) time.Duration {
		return time.Duration(u.Utime.Nano() + u.Stime.Nano())
	}
	return total(self) + total(children)
}

// rawLaunch is bwrap running /bin/true behind the argv sandbox.Run would use, exec'd
// directly with the filter on the descriptor the argv names: the unit of cost. Each launch
// opens the filter afresh (bwrap reads it to the end).
func rawLaunch(b *testing.B, bwrap, workdir string) (func(filter string) (*exec.Cmd, *os.File), string) {
	policy, err := sandbox.NewPolicy(sandbox.Request{Workdir: workdir}, nil)
	if err != nil {
		b.Fatal(err)
	}
	policy.Features, err = sandbox.Probe(context.Background(), bwrap)
	if err != nil {
		b.Fatal(err)
	}
	argv, err := sandbox.Argv(bwrap, policy, []string{"/bin/true"})
	if err != nil {
		b.Fatal(err)
	}
	program, err := sandbox.SeccompProgram()
	if err != nil {
		b.Fatal(err)
	}
	filter := filepath.Join(b.TempDir(), "filter.bpf")
	if err := os.WriteFile(filter, program, 0o600); err != nil {
		b.Fatal(err)
	}
	return func(filter string) (*exec.Cmd, *os.File) {
		file, err := os.Open(filter)
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		// ExtraFiles[i] is descriptor 3+i: the filter goes where the argv says.
		cmd.ExtraFiles = make([]*os.File, sandbox.ArgvSeccompFD-2)
		cmd.ExtraFiles[sandbox.ArgvSeccompFD-3] = file
		return cmd, file
	}, filter
}
