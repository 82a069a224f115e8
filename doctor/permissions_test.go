package doctor

import (
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/doctor/remedy"
	"github.com/bwrapkit/bwrapkit/doctor/report"
)

func TestReplaceableBy(t *testing.T) {
	file := func(path string, mode fs.FileMode, uid, gid uint32) PathEntry {
		return PathEntry{Path: path, Mode: mode, UID: uid, GID: gid}
	}
	dir := func(path string, mode fs.FileMode, uid, gid uint32) PathEntry {
		return PathEntry{Path: path, Mode: fs.ModeDir | mode, UID: uid, GID: gid}
	}
	root := dir("/", 0o755, 0, 0)
	for _, tc := range []struct {
		name    string
		entries []PathEntry
		want    string // substring of the joined findings; "" for none
	}{
		{"root-owned system binary", []PathEntry{file("/usr/bin/bwrap", 0o755, 0, 0), dir("/usr/bin", 0o755, 0, 0), dir("/usr", 0o755, 0, 0), root}, ""},
		{"world-writable binary", []PathEntry{file("/usr/bin/bwrap", 0o757, 0, 0), dir("/usr/bin", 0o755, 0, 0), root}, "/usr/bin/bwrap is writable by every user"},
		{"group-writable by a non-root group", []PathEntry{file("/opt/bwrap", 0o775, 0, 100), dir("/opt", 0o755, 0, 0), root}, "writable by group 100"},
		{"group root may write", []PathEntry{file("/opt/bwrap", 0o775, 0, 0), dir("/opt", 0o755, 0, 0), root}, ""},
		{"a user's own managed install", []PathEntry{file("/home/al/.local/share/bwrapkit/bin/bwrap", 0o755, 1000, 1000), dir("/home/al/.local/share/bwrapkit/bin", 0o755, 1000, 1000), dir("/home/al", 0o750, 1000, 1000), dir("/home", 0o755, 0, 0), root}, ""},
		{"root's binary in a user's directory", []PathEntry{file("/home/al/bin/bwrap", 0o755, 0, 0), dir("/home/al/bin", 0o755, 1000, 1000), dir("/home", 0o755, 0, 0), root}, "/home/al/bin is owned by uid 1000"},
		{"world-writable parent", []PathEntry{file("/srv/tools/bwrap", 0o755, 0, 0), dir("/srv/tools", 0o777, 0, 0), root}, "/srv/tools is writable by every user"},
		{"sticky /tmp is not a way in", []PathEntry{file("/tmp/x/bwrap", 0o755, 0, 0), dir("/tmp/x", 0o755, 0, 0), dir("/tmp", 0o777|fs.ModeSticky, 0, 0), root}, ""},
	} {
		got := strings.Join(ReplaceableBy(tc.entries), "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestPermissionsVerdict(t *testing.T) {
	entries := []PathEntry{{Path: "/usr/bin/bwrap", Mode: 0o755}, {Path: "/usr/bin", Mode: fs.ModeDir | 0o755}, {Path: "/", Mode: fs.ModeDir | 0o755}}
	clean := permissionsVerdict("/usr/bin/bwrap", binaryFacts{Entries: entries, Static: true}, "sudo ")
	if clean.Status != report.StatusOK || !strings.Contains(clean.Summary, "statically linked") {
		t.Errorf("clean: %s %q", clean.Status, clean.Summary)
	}
	writable := append([]PathEntry{{Path: "/usr/bin/bwrap", Mode: 0o777}}, entries[1:]...)
	check := permissionsVerdict("/usr/bin/bwrap", binaryFacts{Entries: writable}, "sudo ")
	if check.Status != report.StatusWarn || !strings.Contains(check.Summary, "anyone who can replace the binary owns the sandbox") {
		t.Errorf("writable: %s %q", check.Status, check.Summary)
	}
	setuid := append([]PathEntry{{Path: "/usr/bin/bwrap", Mode: 0o755 | fs.ModeSetuid}}, entries[1:]...)
	check = permissionsVerdict("/usr/bin/bwrap", binaryFacts{Entries: setuid, Setuid: true}, "")
	if check.Status != report.StatusWarn || !strings.Contains(check.Remedy, "chmod u-s /usr/bin/bwrap") || check.Fix == nil || check.Fix.Kind != remedy.RemoveSetuid {
		t.Errorf("setuid: %s %q %q %+v", check.Status, check.Summary, check.Remedy, check.Fix)
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
