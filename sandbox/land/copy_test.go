package land

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLandHardLinkedSparseFileKeepsItsHoles: a 64 MiB file holding 8 KiB of data, under
// two names in the layer, lands as two files of its own with the same bytes, each
// occupying about what the layer's did (the copy before wrote every zero: 64 MiB a name).
func TestLandHardLinkedSparseFileKeepsItsHoles(t *testing.T) {
	layer, project, fd := fixture(t)
	sparse := filepath.Join(layer.Upper, "sparse")
	file, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	head, middle := make([]byte, 4096), make([]byte, 4096)
	rand.Read(head)
	rand.Read(middle)
	_, err1 := file.WriteAt(head, 0)
	_, err2 := file.WriteAt(middle, 32<<20)
	err3 := file.Truncate(64 << 20)
	if err := file.Close(); err1 != nil || err2 != nil || err3 != nil || err != nil {
		t.Fatal(err1, err2, err3, err)
	}
	if err := os.Link(sparse, filepath.Join(layer.Upper, "again")); err != nil {
		t.Fatal(err)
	}
	var layerStat unix.Stat_t
	if err := unix.Stat(sparse, &layerStat); err != nil {
		t.Fatal(err)
	}
	if layerStat.Blocks*512 >= 64<<20 {
		t.Skip("this file system keeps no holes")
	}
	want := make([]byte, 64<<20)
	copy(want, head)
	copy(want[32<<20:], middle)
	if _, err := Land(layer, fd, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sparse", "again"} {
		path := filepath.Join(project, name)
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes (%v), not the layer's", name, len(got), err)
		}
		var stat unix.Stat_t
		if err := unix.Stat(path, &stat); err != nil {
			t.Fatal(err)
		}
		if stat.Nlink != 1 {
			t.Errorf("%s has %d links, want a file of its own", name, stat.Nlink)
		}
		if stat.Blocks > layerStat.Blocks+64 {
			t.Errorf("%s occupies %d bytes, the layer's file %d: its holes were written", name, stat.Blocks*512, layerStat.Blocks*512)
		}
	}
}

// TestLandingNeeds: what a landing's new entries take, counted against the project's free
// bytes and inodes. On the layer's own file system a file moves by rename, unless it has
// hard links (each name is copied, through a temporary name the journal records), and a
// new directory whose every entry is accepted moves whole; symlinks and other new
// directories are made anew either way. A file counts its data (its size less its holes)
// and a block, a new name its directory entry, a symlink of 60 bytes or more a block.
func TestLandingNeeds(t *testing.T) {
	absent := Lower{Kind: KindAbsent}
	file := func(path string, nlink uint64, size, data int64) Decision {
		return Decision{Action: Apply, Entry: Entry{Path: path, Kind: KindFile, Nlink: nlink, Size: size, Data: data, Lower: absent}}
	}
	decisions := []Decision{
		file("a", 1, 1000, 1000),   // moves on one file system
		file("b", 3, 1<<20, 1<<20), // a name of a linked file
		file("c", 3, 1<<30, 8192),  // sparse, linked
		file("refused", 1, 10, 10), // refused below
		{Action: Apply, Entry: Entry{Path: "d", Kind: KindDir, Lower: absent}}, // new, not whole
		{Action: Apply, Entry: Entry{Path: "old", Kind: KindDir, Lower: Lower{Kind: KindDir}}},
		{Action: Apply, Whole: true, Entry: Entry{Path: "w", Kind: KindDir, Lower: absent}},
		file("w/inside", 2, 5000, 5000), // moves with w on one file system
		{Action: Apply, Entry: Entry{Path: "short", Kind: KindSymlink, Target: strings.Repeat("x", 59), Lower: absent}},
		{Action: Apply, Entry: Entry{Path: "long", Kind: KindSymlink, Target: strings.Repeat("x", 60), Lower: absent}},
	}
	decisions[3].Action = Refuse
	const block = 4096
	name := func(path string) int64 { return int64(len(path)) + 16 }
	journal := func(path string) int64 { return int64(len(path)) + 48 }
	sameBytes := name("a") +
		name("b") + 1<<20 + block + journal("b") +
		name("c") + 8192 + block + journal("c") +
		name("d") + block +
		name("w") +
		name("short") + journal("short") +
		name("long") + block + journal("long") +
		2*block // the journal and the marker
	if bytes, inodes := landingNeeds(decisions, true); bytes != sameBytes || inodes != 2+1+2+2 {
		t.Errorf("same file system: %d bytes, %d inodes; want %d, 7", bytes, inodes, sameBytes)
	}
	copiedBytes := name("a") + 1000 + block +
		name("b") + 1<<20 + block +
		name("c") + 8192 + block +
		name("d") + block +
		name("w") + block +
		name("inside") + 5000 + block +
		name("short") +
		name("long") + block
	if bytes, inodes := landingNeeds(decisions, false); bytes != copiedBytes || inodes != 8 {
		t.Errorf("another file system: %d bytes, %d inodes; want %d, 8", bytes, inodes, copiedBytes)
	}
}

// TestWalkCountsDataNotHoles: the walk gives a sparse file its data bytes (what a copy
// writes), and a dense file its size.
func TestWalkCountsDataNotHoles(t *testing.T) {
	layer, _, fd := fixture(t)
	file, err := os.Create(filepath.Join(layer.Upper, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	_, err1 := file.WriteAt(make([]byte, 4096), 1<<20) // zeros written are data, not a hole
	err2 := file.Truncate(64 << 20)
	if err := file.Close(); err1 != nil || err2 != nil || err != nil {
		t.Fatal(err1, err2, err)
	}
	write(t, filepath.Join(layer.Upper, "dense"), "twelve bytes")
	upper, err := unix.Open(layer.Upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(upper)
	entries, err := Walk(upper, fd, DefaultBounds())
	if err != nil {
		t.Fatal(err)
	}
	data := map[string]int64{}
	for _, entry := range entries {
		data[entry.Path] = entry.Data
	}
	if data["dense"] != 12 {
		t.Errorf("dense: %d bytes of data, want 12", data["dense"])
	}
	if got := data["sparse"]; got < 4096 || got > 64<<10 {
		t.Errorf("sparse: %d bytes of data, want the 4 KiB written (a block or so more at most)", got)
	}
}
