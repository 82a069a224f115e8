package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// TestLiveRunRefusesAReplaceableBwrap: sandbox.Run itself applies the trust rule to the bwrap
// it is given (not only locate's search): a real bwrap copied into a directory every user can
// write (not sticky) is refused before it is executed, and the same copy in a directory
// only its owner can write runs.
func TestLiveRunRefusesAReplaceableBwrap(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		data, err := os.ReadFile(bwrap)
		if err != nil {
			t.Fatal(err)
		}
		private := filepath.Join(t.TempDir(), "private")
		open := filepath.Join(t.TempDir(), "open")
		for _, dir := range []string{private, open} {
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := livetest.WriteProgram(filepath.Join(dir, "bwrap"), data, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(open, 0o777); err != nil {
			t.Fatal(err)
		}
		unavailable := failClosed(t, filepath.Join(open, "bwrap"), ReasonUntrusted)
		if !strings.Contains(unavailable.Message(), open+" is writable by every user") {
			t.Errorf("the refusal does not name the open directory: %s", unavailable.Message())
		}
		policy, err := NewPolicy(Request{Workdir: t.TempDir()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		result, err := Run(context.Background(), policy, []string{"/bin/true"}, Options{Bwrap: filepath.Join(private, "bwrap")})
		if err != nil || !result.Started || result.ExitCode != 0 {
			t.Errorf("the same bwrap in a private directory: %+v, %v", result, err)
		}
	})
}
