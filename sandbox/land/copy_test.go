package land

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
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

// TestCopiedBytes: what a landing copies, counted against the project's free space. On
// the layer's own file system only a file with hard links is copied (the rest move), and
// a file counts its data (its size less its holes).
func TestCopiedBytes(t *testing.T) {
	file := func(nlink uint64, size, data int64) Decision {
		return Decision{Action: Apply, Entry: Entry{Kind: KindFile, Nlink: nlink, Size: size, Data: data}}
	}
	decisions := []Decision{
		file(1, 1000, 1000),   // moves on one file system
		file(3, 1<<20, 1<<20), // a name of a linked file
		file(3, 1<<30, 8192),  // sparse, linked
		file(1, 10, 0),        // refused below
		{Action: Apply, Entry: Entry{Kind: KindDir, Size: 4096}},
	}
	decisions[3].Action = Refuse
	if got, want := copiedBytes(decisions, true), int64(1<<20+4096+8192+4096); got != want {
		t.Errorf("same file system: %d, want %d", got, want)
	}
	if got, want := copiedBytes(decisions, false), int64(1000+4096+1<<20+4096+8192+4096); got != want {
		t.Errorf("another file system: %d, want %d", got, want)
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
