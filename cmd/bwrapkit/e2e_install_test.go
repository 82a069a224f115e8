package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/install"
	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// TestE2EInstallThenLocateRunDoctor installs the real static build from a loopback mirror,
// once as the release tar.gz and once as the raw binary, then uses it with no bwrap on
// PATH: locate finds the managed install, run runs through it, the doctor is healthy.
func TestE2EInstallThenLocateRunDoctor(t *testing.T) {
	livetest.SystemBwrap(t)
	cache := livetest.CachedBwraps()
	for _, name := range []string{"bwrap-0.12.0", "bwrap-0.12.0-linux-amd64.tar.gz"} {
		if _, err := os.Stat(filepath.Join(cache, name)); err != nil {
			livetest.Skip(t, "the static build is not there (scripts/get-test-bwraps.sh): "+err.Error())
		}
	}
	server := httptest.NewServer(http.FileServer(http.Dir(cache)))
	defer server.Close()
	pin, err := install.Default().Artifact("amd64")
	if err != nil {
		t.Fatal(err)
	}

	for name, source := range map[string]install.Source{
		"tar.gz": {URL: server.URL + "/bwrap-0.12.0-linux-amd64.tar.gz", Member: "bwrap"},
		"raw":    {URL: server.URL + "/bwrap-0.12.0", Member: ""},
	} {
		t.Run(name, func(t *testing.T) {
			home := livetest.TempDir(t)
			manifest := filepath.Join(t.TempDir(), "manifest.json")
			artifact := pin
			artifact.Sources = []install.Source{source}
			data, _ := json.Marshal(install.Manifest{Schema: install.Schema, Artifacts: []install.Artifact{artifact}})
			os.WriteFile(manifest, data, 0o644)
			// No bwrap anywhere on PATH: only the managed install can serve.
			environ := []string{"PATH=" + t.TempDir(), "HOME=" + t.TempDir(), "BWRAPKIT_HOME=" + home}

			out := bwrapkitProcess(t, environ, 0, "install", "--manifest", manifest, "--method", "pinned", "--json")
			if !strings.Contains(out, `"changed": true`) || !strings.Contains(out, pin.SHA256) {
				t.Fatalf("install: %s", out)
			}
			located := strings.TrimSpace(bwrapkitProcess(t, environ, 0, "locate"))
			if want := filepath.Join(home, "versions", pin.ID(), "bwrap"); located != want {
				t.Errorf("locate = %s, want the managed install %s", located, want)
			}
			workdir := livetest.TempDir(t)
			bwrapkitProcess(t, environ, 0, "run", "--workdir", workdir, "--", "touch", "made-by-the-managed-bwrap")
			if _, err := os.Stat(filepath.Join(workdir, "made-by-the-managed-bwrap")); err != nil {
				t.Errorf("run through the managed bwrap did not write: %v", err)
			}
			report := bwrapkitProcess(t, environ, 0, "doctor", "--json")
			var doc struct {
				Status string `json:"status"`
				Bwrap  struct{ Path, Source, Version string }
			}
			if err := json.Unmarshal([]byte(report), &doc); err != nil || doc.Status == "fail" || doc.Bwrap.Source != "managed" || doc.Bwrap.Version != "0.12.0" {
				t.Errorf("doctor: %+v %v\n%s", doc, err, report)
			}
		})
	}
}

// bwrapkitProcess runs the built binary with exactly environ and wants status.
func bwrapkitProcess(t *testing.T, environ []string, status int, args ...string) string {
	t.Helper()
	cmd := exec.Command(builtBinary, args...)
	cmd.Env = environ
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if code := cmd.ProcessState.ExitCode(); code != status {
		t.Fatalf("bwrapkit %s: exit %d (%v), want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, err, status, out, stderr.String())
	}
	return string(out)
}
