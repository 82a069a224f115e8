package install

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/bwrapkit/bwrapkit/sandbox"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bwrapkit-install-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Tests must not write into the user's real probe cache.
	sandbox.ProbeCacheDir = filepath.Join(dir, "probe")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
