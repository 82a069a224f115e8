package doctor

import (
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/doctor/remedy"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/internal/trust"
	"github.com/bwrapkit/bwrapkit/locate"
)

// TestPermissionsVerdict: the rule is locate's (a bwrap another non-root user could replace
// fails, as run refuses it); a setuid bit warns.
func TestPermissionsVerdict(t *testing.T) {
	dir := func(path string, mode fs.FileMode, uid uint32) locate.PathEntry {
		return locate.PathEntry{Path: path, Mode: fs.ModeDir | mode, UID: uid}
	}
	parents := []locate.PathEntry{dir("/usr/bin", 0o755, 0), dir("/usr", 0o755, 0), dir("/", 0o755, 0)}
	binary := func(mode fs.FileMode, uid uint32, above ...locate.PathEntry) binaryFacts {
		entries := append([]locate.PathEntry{{Path: "/usr/bin/bwrap", Mode: mode, UID: uid}}, above...)
		return binaryFacts{Entries: entries, Setuid: mode&fs.ModeSetuid != 0, Static: true}
	}
	unmappedRoot := trust.ViewerFor(0, []trust.IDRange{{Inside: 0, Outside: 1000, Count: 1}}, 65534)
	rootMapped := trust.ViewerFor(0, []trust.IDRange{{Inside: 0, Outside: 0, Count: 1}}, 65534)
	for _, tc := range []struct {
		name   string
		facts  binaryFacts
		viewer trust.Viewer
		status report.Status
		says   string
	}{
		{"root's, in root's directories", binary(0o755, 0, parents...), trust.Initial(1000), report.StatusOK, "statically linked"},
		{"the caller's own install", binary(0o755, 1000, dir("/home/al/bin", 0o755, 1000), dir("/home/al", 0o750, 1000), dir("/", 0o755, 0)), trust.Initial(1000), report.StatusOK, "not setuid"},
		{"writable by every user", binary(0o777, 0, parents...), trust.Initial(0), report.StatusFail, "/usr/bin/bwrap is writable by every user"},
		{"in another user's directory", binary(0o755, 0, dir("/home/al/bin", 0o755, 1000), dir("/", 0o755, 0)), trust.Initial(0), report.StatusFail, "owned by uid 1000"},
		{"a group-writable parent", binary(0o755, 0, dir("/usr/bin", 0o775, 0), dir("/", 0o755, 0)), trust.Initial(0), report.StatusFail, "writable by group"},
		{"sticky /tmp is no way in", binary(0o755, 0, dir("/tmp/x", 0o755, 0), dir("/tmp", 0o777|fs.ModeSticky, 0), dir("/", 0o755, 0)), trust.Initial(0), report.StatusOK, ""},
		{"setuid root", binary(0o755|fs.ModeSetuid, 0, parents...), trust.Initial(0), report.StatusWarn, "setuid root"},
		// unshare -U -r as a user: root's files show as the overflow uid, which is not mapped.
		{"root's, seen from a namespace that does not map root", binary(0o755, 65534, dir("/usr/bin", 0o755, 65534), dir("/usr", 0o755, 65534), dir("/", 0o755, 65534)),
			unmappedRoot, report.StatusOK, "owned by an unmapped uid (shown as 65534): this process runs in a user namespace that does not map host root"},
		{"unmapped, but root is mapped: another user's", binary(0o755, 65534, parents...), rootMapped, report.StatusFail, "owned by an unmapped uid"},
		{"unmapped and world-writable", binary(0o777, 65534, parents...), unmappedRoot, report.StatusFail, "writable by every user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := permissionsVerdict("/usr/bin/bwrap", tc.facts, tc.viewer, "sudo ")
			if check.Status != tc.status || !strings.Contains(check.Summary, tc.says) {
				t.Errorf("%s %q, want %s saying %q", check.Status, check.Summary, tc.status, tc.says)
			}
			if tc.status == report.StatusWarn && (!strings.Contains(check.Remedy, "chmod u-s /usr/bin/bwrap") || check.Fix == nil || check.Fix.Kind != remedy.RemoveSetuid) {
				t.Errorf("setuid remedy: %q %+v", check.Remedy, check.Fix)
			}
		})
	}
}

// TestIsStatic reads real binaries: Debian's bwrap is dynamic, the two static builds
// (one of them static-pie) have no program interpreter.
func TestIsStatic(t *testing.T) {
	for _, tc := range []struct {
		path   string
		static bool
	}{
		{systemBwrap(t), false},
		{cachedBwrap(t, "bwrap-0.12.0"), true},
		{cachedBwrap(t, "bwrap-codex"), true},
	} {
		file, err := os.Open(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		static, err := IsStatic(file)
		file.Close()
		if err != nil || static != tc.static {
			t.Errorf("%s: static %v, %v; want %v", tc.path, static, err, tc.static)
		}
	}
	if _, err := IsStatic(strings.NewReader("#!/bin/sh\n")); err == nil {
		t.Error("a script passed for ELF")
	}
}
