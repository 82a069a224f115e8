// Package trust decides whether another user, or a sandbox, could replace a file or
// directory: the one rule for what bwrapkit executes (bwrap) or reads back as trusted state
// (the probe cache, the doctor's scratch directories).
package trust

import (
	"fmt"
	"io/fs"
)

// Entry is one file or directory on the way to what is trusted, as lstat saw it.
type Entry struct {
	Path string
	Mode fs.FileMode
	UID  uint32
	GID  uint32
}

// Viewer is who asks, and what the owners it reads mean in its user namespace.
type Viewer struct {
	UID uint32 // the caller (its effective uid, in its own namespace)
	// Overflow is the uid the kernel shows for an owner this namespace does not map
	// (kernel.overflowuid, normally 65534).
	Overflow uint32
	// OverflowUnmapped: Overflow is itself not mapped here, so an owner shown as Overflow
	// is one the kernel could not translate. False in the initial namespace.
	OverflowUnmapped bool
	// ParentRootMapped: the parent namespace's root is mapped here; then an unmapped
	// owner cannot be root, and is some other user.
	ParentRootMapped bool
	// ParentRoot: the caller is the parent namespace's root itself (uid 0 of the initial
	// namespace, or uid 0 mapped to its parent's 0). The kernel exempts only the initial
	// namespace's root from RLIMIT_NPROC; root of a namespace mapped elsewhere (Docker's
	// userns-remap, rootless Podman, nspawn --private-users) is bounded like any user.
	ParentRoot bool
	// Namespaced: this is not the initial user namespace (its uid map is not the identity).
	Namespaced bool
}

// Initial is the viewer uid sees in the initial user namespace, where every owner is mapped.
func Initial(uid uint32) Viewer {
	return Viewer{UID: uid, Overflow: 65534, ParentRootMapped: true, ParentRoot: uid == 0}
}

// SystemOwner reports whether the caller is the root that owns this system's files: uid 0
// in a namespace where root's files are not shown as unmapped (the initial one, a container
// whose files are its root's). Root of `unshare -U -r` run by a user is not: /usr is not its.
func (v Viewer) SystemOwner() bool {
	return v.UID == 0 && !(v.OverflowUnmapped && !v.ParentRootMapped)
}

// Unmapped reports whether an owner shown as uid is one this namespace does not map.
func (v Viewer) Unmapped(uid uint32) bool { return v.OverflowUnmapped && uid == v.Overflow }

// Replaceable lists why someone other than root and the caller could replace what entries
// describe (the thing itself, then every directory above it, in any order); empty when no
// one could. The rule:
//   - the owner must be root or the caller (an owner can always chmod); an owner this user
//     namespace does not map counts as root's where the namespace does not map the parent's
//     root either: root's files look exactly so there (unshare -U -r as a user, rootless
//     containers, bwrap inside bwrap), and no process in this namespace, nor any sandbox
//     started from it, can write as an unmapped owner (the kernel refuses every uid-based
//     right over it, CAP_FOWNER in this namespace included);
//   - no write for a group or for everyone: which users are in a group is not ours to
//     decide;
//   - except on a sticky directory (/tmp), whose write bits let others add names but not
//     rename or remove ours.
func Replaceable(entries []Entry, v Viewer) []string {
	var findings []string
	for _, entry := range entries {
		sticky := entry.Mode.IsDir() && entry.Mode&fs.ModeSticky != 0
		switch {
		case entry.UID == 0 || entry.UID == v.UID:
		case v.Unmapped(entry.UID) && !v.ParentRootMapped:
		case v.Unmapped(entry.UID):
			findings = append(findings, fmt.Sprintf("%s is owned by an unmapped uid (shown as %d): this user namespace maps root, so the owner is another user outside it", entry.Path, entry.UID))
		case v.Namespaced && entry.UID == v.Overflow:
			// Both this namespace's own uid 65534 and an owner it does not map (the host's
			// root, in a container whose files were not shifted) show so: nothing tells them
			// apart, and the first is a user who could replace it.
			findings = append(findings, fmt.Sprintf("%s is owned by uid %d, which in this user namespace is both a user of its own and how the kernel shows an owner it does not map "+
				"(the host's root, where a container's files were not shifted into its range): bwrapkit cannot tell which", entry.Path, entry.UID))
		default:
			findings = append(findings, fmt.Sprintf("%s is owned by uid %d, neither root nor the caller (uid %d)", entry.Path, entry.UID, v.UID))
		}
		switch {
		case sticky:
		case entry.Mode.Perm()&0o002 != 0:
			findings = append(findings, fmt.Sprintf("%s is writable by every user (mode %04o)", entry.Path, entry.Mode.Perm()))
		case entry.Mode.Perm()&0o020 != 0:
			findings = append(findings, fmt.Sprintf("%s is writable by group %d (mode %04o)", entry.Path, entry.GID, entry.Mode.Perm()))
		}
	}
	return findings
}

// Notes name the entries Replaceable accepted only because their owner is unmapped, so a
// report can say so: the kernel hides the real owner, and bwrapkit took it for root's.
func Notes(entries []Entry, v Viewer) []string {
	var notes []string
	for _, entry := range entries {
		if v.Unmapped(entry.UID) && !v.ParentRootMapped {
			notes = append(notes, fmt.Sprintf("%s is owned by an unmapped uid (shown as %d): this process runs in a user namespace that does not map host root, "+
				"so root's files look so; no user in this namespace and no sandbox started from it can replace it", entry.Path, entry.UID))
			return notes // one says it: the same holds for every entry so owned
		}
	}
	return notes
}

// Ambiguous reports whether some entry's owner is the overflow uid in a namespace that maps
// it (see Replaceable): a refusal no chmod inside can fix, only the container's setup.
func Ambiguous(entries []Entry, v Viewer) bool {
	for _, entry := range entries {
		if v.Namespaced && !v.OverflowUnmapped && entry.UID == v.Overflow && entry.UID != v.UID {
			return true
		}
	}
	return false
}
