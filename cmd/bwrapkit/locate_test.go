package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// TestE2ELocateRefusesAPlantedBwrap: a bwrap copy in a world-writable directory on PATH
// (where any user could have put it, or can swap it) is refused by the built binary: with
// a safe bwrap after it on PATH, that one is printed; alone, exit 1 naming the reason; as
// --bwrap, exit 1 and no fallback.
func TestE2ELocateRefusesAPlantedBwrap(t *testing.T) {
	system, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("no bwrap on PATH to copy")
	}
	systemReal, _ := filepath.EvalSymlinks(system)
	data, err := os.ReadFile(system)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := filepath.EvalSymlinks(t.TempDir())
	planted := filepath.Join(base, "open-bin")
	if err := os.Mkdir(planted, 0o755); err != nil {
		t.Fatal(err)
	}
	copy := filepath.Join(planted, "bwrap")
	if err := livetest.WriteProgram(copy, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(planted, 0o777); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := func(path string) []string { return []string{"PATH=" + path, "HOME=" + home, "BWRAPKIT_HOME=" + home} }
	reason := planted + " is writable by every user (mode 0777)"

	status, stdout, stderr := runBuilt(t, env(planted+":"+filepath.Dir(system)), "locate", "--json")
	var found struct {
		Path       string
		Candidates []struct {
			Path   string
			Usable bool
			Reason string
		}
	}
	if err := json.Unmarshal([]byte(stdout), &found); err != nil || status != 0 {
		t.Fatalf("locate --json: status %d %v\n%s%s", status, err, stdout, stderr)
	}
	if found.Path != systemReal || len(found.Candidates) == 0 || found.Candidates[0].Path != copy ||
		found.Candidates[0].Usable || !strings.Contains(found.Candidates[0].Reason, reason) {
		t.Errorf("the planted copy was not refused: %+v", found)
	}

	status, stdout, stderr = runBuilt(t, env(planted), "locate")
	if status != exitFailure || stdout != "" || !strings.Contains(stderr, copy) || !strings.Contains(stderr, reason) {
		t.Errorf("planted copy alone: status %d stdout %q stderr %q", status, stdout, stderr)
	}
	status, stdout, stderr = runBuilt(t, env(filepath.Dir(system)), "locate", "--bwrap", copy)
	if status != exitFailure || stdout != "" || !strings.Contains(stderr, "--bwrap "+copy) || !strings.Contains(stderr, reason) {
		t.Errorf("--bwrap planted copy: status %d stdout %q stderr %q", status, stdout, stderr)
	}
}
