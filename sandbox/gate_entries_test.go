package sandbox

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSameEntries: the overlay must show the checked directory's entries, name for name
// and inode for inode (or with xino's layer bits above a 32-bit number), and no others.
func TestSameEntries(t *testing.T) {
	file := func(ino uint64) entryID { return entryID{ino: ino} }
	checked := map[string]entryID{"go.mod": file(11), "src": {ino: 12, dir: true}}
	if err := sameEntries("/p", map[string]entryID{"go.mod": file(11), "src": {ino: 12, dir: true}}, checked, false); err != nil {
		t.Errorf("the same entries: %v", err)
	}
	if err := sameEntries("/p", map[string]entryID{"go.mod": file(1<<33 | 11), "src": {ino: 12, dir: true}}, checked, false); err != nil {
		t.Errorf("an xino-numbered lower entry: %v", err)
	}
	for name, inside := range map[string]map[string]entryID{
		"one more entry":      {"go.mod": file(11), "src": {ino: 12, dir: true}, "shadow": file(13)},
		"one entry fewer":     {"go.mod": file(11)},
		"another inode":       {"go.mod": file(11), "src": {ino: 99, dir: true}},
		"another name":        {"go.mod": file(11), "etc": {ino: 12, dir: true}},
		"a swapped directory": {"passwd": file(21), "shadow": file(22)},
	} {
		if err := sameEntries("/p", inside, checked, false); err == nil || !strings.Contains(err.Error(), "swapped") {
			t.Errorf("%s: %v, want a refusal naming a swapped path", name, err)
		}
	}
}

// TestSameEntriesAcrossFileSystems: with the layers on different file systems overlayfs
// numbers directories itself, so a directory is known by its birth and change times, mode
// and links; a file still by its inode.
func TestSameEntriesAcrossFileSystems(t *testing.T) {
	stamp := func(sec int64, nsec uint32) unix.StatxTimestamp { return unix.StatxTimestamp{Sec: sec, Nsec: nsec} }
	src := entryID{ino: 12, dir: true, mode: unix.S_IFDIR | 0o755, nlink: 3, born: stamp(100, 1), changed: stamp(200, 2)}
	checked := map[string]entryID{"go.mod": {ino: 11}, "src": src}
	overlays := src
	overlays.ino = 3 // the overlay's own number
	if err := sameEntries("/p", map[string]entryID{"go.mod": {ino: 11}, "src": overlays}, checked, true); err != nil {
		t.Errorf("the project's directory under the overlay's number: %v", err)
	}
	for name, change := range map[string]func(*entryID){
		"born later":    func(id *entryID) { id.born = stamp(300, 0) },
		"changed apart": func(id *entryID) { id.changed = stamp(200, 3) },
		"more links":    func(id *entryID) { id.nlink = 4 },
		"another mode":  func(id *entryID) { id.mode = unix.S_IFDIR | 0o777 },
		"not a dir":     func(id *entryID) { id.dir = false },
	} {
		fake := overlays
		change(&fake)
		if err := sameEntries("/p", map[string]entryID{"go.mod": {ino: 11}, "src": fake}, checked, true); err == nil {
			t.Errorf("a directory %s was taken for the project's", name)
		}
	}
	if err := sameEntries("/p", map[string]entryID{"go.mod": {ino: 99}, "src": overlays}, checked, true); err == nil {
		t.Error("a file is still known by its inode across file systems")
	}
}
