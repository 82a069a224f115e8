package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// TestAcceptanceUnmappedOwners: in a user namespace that does not map host root, root's
// files show as the overflow uid (65534). bwrap works there, so the doctor must pass and run
// must work, naming the unmapped owner instead of refusing every bwrap as "another user's"
// (issue 19 item 5); and root of such a namespace is bounded by RLIMIT_NPROC, so the limits
// self-test must not warn that it is not (item 6). Shapes: `unshare -U -r` as nobody, and
// bwrap inside bwrap as nobody; as root also `unshare -U -r` as root, where
// root stays root (nothing unmapped, and the RLIMIT_NPROC warning is right). The doctor's
// launch and self-tests go through sandbox.Run, which applies the same trust rule.
func TestAcceptanceUnmappedOwners(t *testing.T) {
	outer := livetest.SystemBwrap(t)
	nobody, ok := asNobody()
	if !ok {
		livetest.Skip(t, "runs as root or as nobody only")
	}
	nested := []string{outer, "--unshare-user", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
		"--ro-bind", filepath.Dir(builtBinary), filepath.Dir(builtBinary), "--"}
	shapes := []struct {
		name     string
		prefix   []string
		unmapped bool // root's files show as 65534 in this shape
	}{
		{"unshare -U -r as nobody", append(append([]string{}, nobody...), "unshare", "-U", "-r"), true},
		// nobody inside maps to itself, so root's files show as the caller's own uid here.
		{"bwrap inside bwrap as nobody", append(append([]string{}, nobody...), nested...), false},
	}
	if os.Geteuid() == 0 {
		shapes = append(shapes, struct {
			name     string
			prefix   []string
			unmapped bool
		}{"unshare -U -r as root", []string{"unshare", "-U", "-r"}, false})
	}
	for _, shape := range shapes {
		t.Run(shape.name, func(t *testing.T) {
			env := []string{"HOME=/tmp", newcomerPATH}
			status, stdout, stderr := runNewcomer(t, shape.prefix, env, "doctor", "--json")
			var doc doctorDoc
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
				t.Fatalf("exit %d: %v\n%s\n%s", status, err, stdout, stderr)
			}
			if status != 0 || doc.Status == "fail" {
				t.Errorf("doctor: exit %d, status %s", status, doc.Status)
			}
			for _, check := range doc.Checks {
				switch {
				case check.ID == "bwrap.permissions" && shape.unmapped:
					if check.Status != "ok" || !strings.Contains(check.Summary, "owned by an unmapped uid") {
						t.Errorf("%s: %s %q, want ok naming the unmapped owner", check.ID, check.Status, check.Summary)
					}
				case check.ID == "selftest.limits" && shape.unmapped:
					// Root here is not the initial namespace's root: RLIMIT_NPROC binds it. It
					// makes no cgroup (the host's cgroups are not its to write), which the
					// check says, without the root warning.
					keeperOnly := check.Status == "warn" && strings.Contains(check.Summary, "keeper only")
					if (check.Status != "ok" && !keeperOnly) || strings.Contains(check.Summary, "RLIMIT_NPROC") {
						t.Errorf("%s: %s %q, want ok or keeper only (root of this namespace is bounded)", check.ID, check.Status, check.Summary)
					}
				case check.Status == "fail":
					t.Errorf("%s: %s %q\n%s", check.ID, check.Status, check.Summary, check.Remedy)
				}
			}
			status, stdout, stderr = runNewcomer(t, shape.prefix, env, "locate", "--json")
			if status != 0 || !strings.Contains(stdout, `"usable": true`) {
				t.Errorf("locate: exit %d\n%s\n%s", status, stdout, stderr)
			}
			// Root of a user's namespace cannot write /usr/local: its managed install (what
			// `bwrapkit install` would write) is the user's.
			if managed := "/tmp/.local/share/bwrapkit/bin/bwrap"; shape.unmapped && !strings.Contains(stdout, managed) {
				t.Errorf("locate: the managed install is not %s:\n%s", managed, stdout)
			}
		})
	}
}
