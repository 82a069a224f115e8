package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// TestLiveLaunchTimeoutIsReproducedBeforeItIsReported: a launch that hangs once (as a healthy
// one can on a host loaded far past its cores) is tried again with twice the bound and the
// check passes; one that hangs every time fails, after exactly two attempts. The hang is a
// real bwrap's stand-in that holds the status pipe open and never reports child-pid; the
// second attempt is the real bwrap.
func TestLiveLaunchTimeoutIsReproducedBeforeItIsReported(t *testing.T) {
	real := livetest.SystemBwrap(t)
	for _, tc := range []struct {
		name     string
		hangs    string // how many launches hang: "first" or "always"
		status   report.Status
		attempts int
	}{
		{"hangs once", "first", report.StatusOK, 2},
		{"hangs always", "always", report.StatusFail, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			attempts := filepath.Join(dir, "attempts")
			wrapper := filepath.Join(dir, "bwrap")
			script := "#!/bin/sh\ncase \"$1\" in --help|--version) exec " + real + " \"$@\";; esac\necho x >>" + attempts + "\n"
			if tc.hangs == "first" {
				script += `[ "$(wc -l <` + attempts + `)" -gt 1 ] && exec ` + real + ` "$@"` + "\n"
			}
			script += "exec sleep 60\n"
			if err := livetest.WriteProgram(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			cfg := liveConfig(t, wrapper)
			cfg.Checks = []string{"launch"}
			cfg.LaunchBound = 500 * time.Millisecond
			got, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			check := checkByID(t, got, "launch")
			data, _ := os.ReadFile(attempts)
			if n := strings.Count(string(data), "x"); check.Status != tc.status || n != tc.attempts {
				t.Errorf("launch %s after %d attempts, want %s after %d: %s\n%s", check.Status, n, tc.status, tc.attempts, check.Summary, check.Detail)
			}
			if tc.status == report.StatusFail && !strings.Contains(check.Summary, "hung") {
				t.Errorf("the reproduced hang is not named: %s", check.Summary)
			}
		})
	}
}
