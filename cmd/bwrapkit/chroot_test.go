package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// TestAcceptanceChrootWithoutProc: in a chroot without /proc (a build root), the doctor
// cannot find its own executable through /proc/self/exe and the static bwrap 0.12.0 fails
// even --help; a JSON or Prometheus consumer must still get a whole report on stdout, exit
// 1, with the failing check naming the missing proc and how to mount it (issue 19 item 7).
func TestAcceptanceChrootWithoutProc(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root; make test runs this as root")
	}
	static := filepath.Join(livetest.CachedBwraps(), "bwrap-0.12.0")
	if _, err := os.Stat(static); err != nil {
		livetest.Skip(t, "no static bwrap 0.12.0 (scripts/get-test-bwraps.sh): "+err.Error())
	}
	root := livetest.TempDir(t)
	for _, dir := range []string{"usr/bin", "usr/local/bin", "tmp", "proc", "dev"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(root, "tmp"), 0o1777)
	// A build root has /dev/null (every exec of a child opens it for stdin); not /proc.
	if err := unix.Mknod(filepath.Join(root, "dev/null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	copyFile(t, builtBinary, filepath.Join(root, "usr/local/bin/bwrapkit"))
	copyFile(t, static, filepath.Join(root, "usr/bin/bwrap"))
	for _, format := range []string{"json", "prometheus"} {
		cmd := exec.Command("chroot", root, "/usr/local/bin/bwrapkit", "doctor", "--format", format)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/tmp"}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		exit, _ := err.(*exec.ExitError)
		if exit == nil || exit.ExitCode() != 1 {
			t.Fatalf("%s: %v, want exit 1\n%s\n%s", format, err, stdout.String(), stderr.String())
		}
		if format == "prometheus" {
			if !strings.Contains(stdout.String(), "bwrapkit_doctor_healthy 0") {
				t.Errorf("prometheus: no bwrapkit_doctor_healthy 0:\n%s\n%s", stdout.String(), stderr.String())
			}
			continue
		}
		var doc doctorDoc
		if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
			t.Fatalf("json: %v\nstdout %q\nstderr %s", err, stdout.String(), stderr.String())
		}
		named := false
		for _, check := range doc.Checks {
			if check.Status == "fail" && strings.Contains(check.Summary, "no proc is mounted") && strings.Contains(check.Remedy, "mount -t proc proc /proc") {
				named = true
			}
			if check.Status == "fail" && strings.Contains(check.Summary, "does not behave like bwrap") {
				t.Errorf("%s blames the bwrap: %s", check.ID, check.Summary)
			}
		}
		if doc.Status != "fail" || !named {
			t.Errorf("status %s; no failing check names the missing proc: %+v", doc.Status, doc.Checks)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := livetest.WriteProgram(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}
