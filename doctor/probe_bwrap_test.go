package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBwrapHelpRunsOncePerDoctor: a whole doctor asks the bwrap in use for --help once, on a
// real bwrap (behind a wrapper that logs its first argument) and on an impostor, whose
// diagnosis quotes that same --help text instead of running it again.
func TestBwrapHelpRunsOncePerDoctor(t *testing.T) {
	system := systemBwrap(t)
	for _, tc := range []struct {
		name, body string
		healthy    bool
	}{
		{"real bwrap", "exec " + system + ` "$@"`, true},
		{"impostor", `echo "usage: not a bwrap at all"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := liveConfig(t, "")
			dir := cfg.TempDir
			log := filepath.Join(dir, "calls")
			wrapper := filepath.Join(dir, "bwrap")
			script := "#!/bin/sh\necho \"$1\" >> " + log + "\n" + tc.body + "\n"
			if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			cfg.Query.Flag = wrapper
			got, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got.Healthy() != tc.healthy {
				t.Fatalf("healthy %v, want %v:\n%s", got.Healthy(), tc.healthy, dump(got))
			}
			calls, _ := os.ReadFile(log)
			if n := strings.Count(string(calls), "--help\n"); n != 1 {
				t.Errorf("--help ran %d times, want once; calls:\n%s", n, calls)
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
