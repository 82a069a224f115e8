package install

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bwrapkit-install-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Tests must not write into the user's real probe cache.
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache")) // before the process's prober is first made
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
