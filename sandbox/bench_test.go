package sandbox

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// BenchmarkRun is the Go API's whole cost (launch proof, status fd, stderr tail, wait)
// against bwrap exec'd directly with the same argv, interleaved in one loop. The
// reported ratio is what the runner itself adds, without a CLI's process start-up.
func BenchmarkRun(b *testing.B) {
	bwrap := livetest.SystemBwrap(b)
	policy, err := NewPolicy(Request{Workdir: b.TempDir()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	if policy.Features, err = Probe(context.Background(), bwrap); err != nil {
		b.Fatal(err)
	}
	argv, err := Argv(bwrap, policy, []string{"/bin/true"})
	if err != nil {
		b.Fatal(err)
	}
	program, err := SeccompProgram()
	if err != nil {
		b.Fatal(err)
	}
	var runTime, rawTime time.Duration
	for b.Loop() {
		began := time.Now()
		// The raw argv reads its filter on descriptor 3, as a caller of Argv must give it.
		filterRead, filterWrite, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		filterWrite.Write(program)
		filterWrite.Close()
		raw := exec.Command(argv[0], argv[1:]...)
		raw.ExtraFiles = []*os.File{filterRead}
		err = raw.Run()
		filterRead.Close()
		if err != nil {
			b.Fatal(err)
		}
		rawTime += time.Since(began)
		began = time.Now()
		result, err := Run(context.Background(), policy, []string{"/bin/true"}, Options{Bwrap: bwrap})
		if err != nil || result.ExitCode != 0 {
			b.Fatalf("%+v %v", result, err)
		}
		runTime += time.Since(began)
	}
	b.ReportMetric(float64(runTime)/float64(rawTime), "ratio-vs-bwrap")
	b.ReportMetric(float64(runTime.Microseconds())/float64(b.N)/1000, "run-ms")
	b.ReportMetric(float64(rawTime.Microseconds())/float64(b.N)/1000, "bwrap-ms")
}
