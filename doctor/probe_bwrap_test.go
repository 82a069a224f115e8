package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// TestBwrapHelpRunsOncePerDoctor: a doctor asks the bwrap in use for --help at most once,
// through the sandbox's prober, and not at all once the probe is cached (a second doctor);
// an impostor is asked once more each time, for the text its diagnosis quotes, and a second
// doctor asks it again (an impostor is never cached on disk, and there is no process-wide
// memory: a second doctor in one process costs what it costs as its own). On a real bwrap
// (behind a wrapper that logs its first argument) and on an impostor.
func TestBwrapHelpRunsOncePerDoctor(t *testing.T) {
	system := systemBwrap(t)
	for _, tc := range []struct {
		name, body string
		healthy    bool
		helps      [2]int // --help runs by the first doctor, and by the second
	}{
		{"real bwrap", "exec " + system + ` "$@"`, true, [2]int{1, 0}},
		{"impostor", `echo "usage: not a bwrap at all"`, false, [2]int{2, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := liveConfig(t, "")
			dir := cfg.TempDir
			log := filepath.Join(dir, "calls")
			wrapper := filepath.Join(dir, "bwrap")
			script := "#!/bin/sh\necho \"$1\" >> " + log + "\n" + tc.body + "\n"
			if err := livetest.WriteProgram(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			cfg.Query.Flag = wrapper
			var got report.Report
			for round, want := range tc.helps {
				os.Remove(log)
				var err error
				got, err = Run(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if got.Healthy() != tc.healthy {
					t.Fatalf("healthy %v, want %v:\n%s", got.Healthy(), tc.healthy, dump(got))
				}
				calls, _ := os.ReadFile(log)
				if n := strings.Count(string(calls), "--help\n"); n != want {
					t.Errorf("doctor %d: --help ran %d times, want %d; calls:\n%s", round+1, n, want, calls)
				}
			}
			if !tc.healthy {
				features := checkByID(t, got, "bwrap.features")
				if features.Status != "fail" || !strings.Contains(features.Detail, "not a bwrap at all") {
					t.Errorf("the impostor's diagnosis does not quote its --help: %+v", features)
				}
			}
		})
	}
}
