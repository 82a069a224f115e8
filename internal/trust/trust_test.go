package trust

import (
	"io/fs"
	"strings"
	"testing"
)

func TestViewerFor(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		uidMap                   string
		unmapped, rootIn, isRoot bool
	}{
		{"the initial namespace", "         0          0 4294967295\n", false, true, true},
		{"unshare -U -r as a user", "         0       1000          1\n", true, false, false},
		{"unshare -U -r as root", "         0          0          1\n", true, true, true},
		{"bwrap as nobody: nobody maps to itself", "     65534      65534          1\n", false, false, false},
		{"rootless podman", "0 1000 1\n1 100000 65536\n", false, false, false},
		{"docker userns-remap", "0 231072 65536\n", false, false, false},
		{"nspawn --private-users=pick", "0 1758330880 65536\n", false, false, false},
		{"unreadable: what the owners say", "", false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := ViewerFor(0, ParseIDMap(strings.NewReader(tc.uidMap)), 65534)
			if owner := !(tc.unmapped && !tc.rootIn); v.SystemOwner() != owner {
				t.Errorf("SystemOwner %v, want %v", v.SystemOwner(), owner)
			}
			if v.OverflowUnmapped != tc.unmapped || v.ParentRootMapped != tc.rootIn || v.ParentRoot != tc.isRoot {
				t.Errorf("%+v, want unmapped %v, parent root mapped %v, parent root %v", v, tc.unmapped, tc.rootIn, tc.isRoot)
			}
		})
	}
}

func TestReplaceable(t *testing.T) {
	const caller = 1000
	file := func(mode fs.FileMode, uid uint32) Entry {
		return Entry{Path: "/x/bwrap", Mode: mode, UID: uid, GID: uid}
	}
	dir := func(mode fs.FileMode, uid uint32) Entry {
		return Entry{Path: "/x", Mode: fs.ModeDir | mode, UID: uid, GID: uid}
	}
	root := Entry{Path: "/", Mode: fs.ModeDir | 0o755}
	initial := Initial(caller)
	// A user's unshare -U -r: the caller is 0 inside, root's files are unmapped.
	unmappedRoot := ViewerFor(0, []IDRange{{0, caller, 1}}, 65534)
	// Root's unshare -U -r: root is mapped, so an unmapped owner is someone else.
	rootMapped := ViewerFor(0, []IDRange{{0, 0, 1}}, 65534)
	cases := []struct {
		name    string
		entries []Entry
		viewer  Viewer
		want    string // a substring of the findings; "" for none
		note    bool
	}{
		{"root's", []Entry{file(0o755, 0), dir(0o755, 0), root}, initial, "", false},
		{"the caller's", []Entry{file(0o755, caller), dir(0o700, caller), root}, initial, "", false},
		{"sticky world-writable", []Entry{file(0o755, caller), dir(fs.ModeSticky|0o777, 0), root}, initial, "", false},
		{"world-writable directory", []Entry{file(0o755, 0), dir(0o777, 0), root}, initial, "/x is writable by every user", false},
		{"group-writable", []Entry{file(0o775, 0), dir(0o755, 0), root}, initial, "/x/bwrap is writable by group 0", false},
		{"another user's", []Entry{file(0o755, 1001), dir(0o755, 0), root}, initial, "owned by uid 1001", false},
		{"nobody's in the initial namespace is nobody's", []Entry{file(0o755, 65534), dir(0o755, 0), root}, initial, "owned by uid 65534", false},
		{"unmapped where root is unmapped: root's as seen from inside", []Entry{file(0o755, 65534), dir(0o755, 65534), {Path: "/", Mode: fs.ModeDir | 0o755, UID: 65534}}, unmappedRoot, "", true},
		{"unmapped and world-writable", []Entry{file(0o755, 65534), dir(0o777, 65534), root}, unmappedRoot, "/x is writable by every user", true},
		{"unmapped where root is mapped: another user outside", []Entry{file(0o755, 65534), dir(0o755, 0), root}, rootMapped, "owned by an unmapped uid (shown as 65534): this user namespace maps root", false},
		{"nspawn --private-users=pick without shifted files: 65534 is ambiguous", []Entry{file(0o755, 65534), dir(0o755, 65534), root},
			ViewerFor(0, []IDRange{{0, 1758330880, 65536}}, 65534), "which in this user namespace is both a user of its own and how the kernel shows an owner it does not map", false},
		{"a mapped uid 1 in a namespace that does not map root", []Entry{file(0o755, 1), dir(0o755, 65534), root}, unmappedRoot, "owned by uid 1", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := strings.Join(Replaceable(c.entries, c.viewer), "; ")
			switch {
			case c.want == "" && got != "":
				t.Errorf("want none, got %q", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Errorf("want %q, got %q", c.want, got)
			}
			if notes := Notes(c.entries, c.viewer); (len(notes) > 0) != c.note {
				t.Errorf("notes %q, want some: %v", notes, c.note)
			}
		})
	}
}
