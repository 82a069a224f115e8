package doctor

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/sandbox"
)

// BenchmarkDoctor reports a whole doctor run (every check, every self-test) in units of one
// raw bwrap launch of /bin/true with the same full-isolation argv, both measured here, so
// the figure means the same on a fast and a slow machine. Goal: at most 30.
func BenchmarkDoctor(b *testing.B) {
	bwrap := systemBwrap(b)
	cfg := liveConfig(b, bwrap)
	launch := rawLaunch(b, bwrap, cfg.TempDir)
	var doctorTime, launchTime time.Duration
	b.ResetTimer()
	for b.Loop() {
		began := time.Now()
		if err := launch.Run(); err != nil {
			b.Fatal(err)
		}
		launchTime += time.Since(began)
		launch = exec.Command(launch.Path, launch.Args[1:]...)

		began = time.Now()
		got, err := Run(context.Background(), cfg)
		doctorTime += time.Since(began)
		if err != nil || !got.Healthy() {
			b.Fatalf("unhealthy: %v\n%s", err, dump(got))
		}
	}
	b.ReportMetric(float64(doctorTime)/float64(launchTime), "launches/doctor")
}

// rawLaunch is bwrap running /bin/true behind the argv sandbox.Run would use, exec'd
// directly: the unit of cost.
func rawLaunch(b *testing.B, bwrap, workdir string) *exec.Cmd {
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
	return exec.Command(argv[0], argv[1:]...)
}
