package gitmeta

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/bwrapkit/bwrapkit/internal/safefile"
)

// A git index, as bwrapkit reads it: every path it records, and which are gitlinks
// (submodules). Two things make that more than one read of one file.
//
// A split index (core.splitIndex, `git update-index --split-index`) keeps most entries
// in a shared index, $GIT_DIR/sharedindex.<hash>, and only the recent changes in
// .git/index, whose "link" extension names the shared one and says which of its entries
// the changes replace or delete (two EWAH bitmaps). Reading .git/index alone missed
// every submodule recorded before the split: their .git was left writable, and a
// command that redirected one had a host `git status` in it run the command's
// core.fsmonitor. The shared index is read too, and a split index whose shared part
// cannot be read is an error, never an index without submodules.
//
// And a large repository's index is megabytes (80,000 files: 8 MB), which one policy's
// checks read up to three times (the submodules to protect, the landing's guards, the
// test for an enclosing repository): it is mapped rather than copied (safefile.Mapped),
// walked without an allocation per entry, and read once per policy (Indexes).

// Indexes is the gitlinks of the git indexes one policy's checks read, each index read
// once. A nil *Indexes reads afresh on every call. It is not for reuse across runs: an
// index changes between them (and after a commit-mode run it is the command's).
type Indexes struct {
	mu       sync.Mutex
	gitlinks map[string][]string
}

// links returns the paths of the gitlink (mode 160000) entries of the index at path,
// sorted, each once. A missing index has none.
func (x *Indexes) links(path string) ([]string, error) {
	if links, ok := x.kept(path); ok {
		return links, nil
	}
	raw, _, err := scanLinks(path, "")
	if err != nil {
		return nil, err
	}
	return x.keep(path, raw)
}

// tracks says whether any path the index at path records starts with prefix. Its one
// read also gives the index's gitlinks, kept for the enclosing repository's submodules,
// which are read next (a submodule at a bad path is refused there).
func (x *Indexes) tracks(path, prefix string) (bool, error) {
	raw, tracked, err := scanLinks(path, prefix)
	if err != nil {
		return false, err
	}
	_, _ = x.keep(path, raw)
	return tracked, nil
}

// kept is the gitlinks an earlier read of path kept.
func (x *Indexes) kept(path string) ([]string, bool) {
	if x == nil {
		return nil, false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	links, ok := x.gitlinks[path]
	return links, ok
}

// keep is plainLinks of raw, kept for path when they pass (not when refused: a later
// call says so again).
func (x *Indexes) keep(path string, raw []string) ([]string, error) {
	links, err := plainLinks(raw)
	if err != nil || x == nil {
		return links, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.gitlinks == nil {
		x.gitlinks = map[string][]string{}
	}
	x.gitlinks[path] = links
	return links, nil
}

// indexGitlinks is Indexes.links, read afresh.
func indexGitlinks(path string) ([]string, error) {
	var fresh *Indexes
	return fresh.links(path)
}

// scanLinks reads the index at path once: its gitlinks as recorded, and whether any path
// it records starts with prefix (never, for "").
func scanLinks(path, prefix string) (links []string, tracked bool, err error) {
	err = scanIndex(path, func(name []byte, mode uint32) {
		if mode&0o170000 == 0o160000 && len(name) > 0 {
			links = append(links, string(name))
		}
		tracked = tracked || prefix != "" && bytes.HasPrefix(name, []byte(prefix))
	})
	if err != nil {
		return nil, false, err
	}
	return links, tracked, nil
}

// plainLinks is gitlinks sorted, each once, or an error for one at a path git would never
// add: git reads one a command wrote, and an absolute one leads a host git status into a
// .git anywhere on the host.
func plainLinks(links []string) ([]string, error) {
	for _, link := range links {
		if !inWorkTree(link) {
			return nil, fmt.Errorf("the index records a submodule at %q, which is not a plain path inside the work tree", link)
		}
	}
	slices.Sort(links)
	return slices.Compact(links), nil
}

// inWorkTree says whether an index path is one git would add: relative, clean, with no
// ".", ".." or .git component (in any case).
func inWorkTree(name string) bool {
	if name == "" || path.IsAbs(name) || path.Clean(name) != name {
		return false
	}
	for _, component := range strings.Split(name, "/") {
		if component == "." || component == ".." || strings.EqualFold(component, ".git") {
			return false
		}
	}
	return true
}

// scanIndex calls visit with every entry of the index at path (see scanIndexData); a
// missing index has none. A split index's shared part is read beside it, where git
// keeps it.
func scanIndex(path string, visit func(name []byte, mode uint32)) error {
	hashSize := objectHashSize(filepath.Dir(path))
	withShared := func(name string, fn func(shared []byte) error) error {
		return safefile.Mapped(filepath.Join(filepath.Dir(path), name), maxIndexSize, fn)
	}
	err := safefile.Mapped(path, maxIndexSize, func(data []byte) error {
		return scanIndexData(data, hashSize, withShared, visit)
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil // scanShared's errors do not unwrap: a missing shared index is no missing index
	}
	return err
}

// scanIndexData is scanIndex's pure half: data is the index, hashSize its repository's
// object id size, and withShared maps a file beside it (a split index's shared part). It
// calls visit with each entry's path and mode: the index's own entries, and a split
// index's shared entries, each that a change replaces a second time with its
// replacement's mode (git strips the replacement's name: it is the shared entry's).
// Entries a split index deletes are visited too: what bwrapkit reads an index for (the
// submodules to protect, whether a directory is tracked) errs on the side of more. name
// is valid only during the call. On an error, what was visited must be ignored.
func scanIndexData(data []byte, hashSize int, withShared func(name string, fn func(shared []byte) error) error, visit func(name []byte, mode uint32)) error {
	end, err := walkIndexEnd(data, hashSize, func(name []byte, mode uint32) {
		if len(name) > 0 {
			visit(name, mode)
		}
	})
	if err != nil {
		return err
	}
	link, err := linkExtension(data, end, hashSize)
	if err != nil || link == nil {
		return err
	}
	return scanShared(data, link, hashSize, withShared, visit)
}

// scanShared visits the shared index a split index's link extension names.
func scanShared(main, link []byte, hashSize int, withShared func(name string, fn func(shared []byte) error) error, visit func(name []byte, mode uint32)) error {
	if len(link) < hashSize {
		return errors.New("split index: link extension truncated")
	}
	name, bitmaps := link[:hashSize], link[hashSize:]
	if bytes.Count(name, []byte{0}) == len(name) {
		return nil // split, with no shared index (yet): git reads none either
	}
	sharedName := "sharedindex." + hex.EncodeToString(name)
	err := withShared(sharedName, func(shared []byte) error {
		// Its trailer is its hash, which names it (git refuses a shared index that differs).
		if len(shared) < 12+hashSize || !bytes.Equal(shared[len(shared)-hashSize:], name) {
			return errors.New("it is not the shared index its name says")
		}
		var replaced []int
		if len(bitmaps) > 0 {
			// At most as many entries as the file can hold, whatever its header claims.
			entries := min(int(binary.BigEndian.Uint32(shared[8:12])), len(shared)/(40+hashSize+2))
			_, deletions, err := ewahBits(bitmaps, entries) // deleted entries are visited all the same
			if err != nil {
				return fmt.Errorf("the link's delete bitmap: %v", err)
			}
			if replaced, _, err = ewahBits(bitmaps[deletions:], entries); err != nil {
				return fmt.Errorf("the link's replace bitmap: %v", err)
			}
		}
		// The first len(replaced) entries of the index replace the shared entries the
		// bitmap marks, in order.
		modes := make([]uint32, 0, len(replaced))
		if _, err := walkIndexEnd(main, hashSize, func(_ []byte, mode uint32) {
			if len(modes) < len(replaced) {
				modes = append(modes, mode)
			}
		}); err != nil {
			return err
		}
		if len(modes) < len(replaced) {
			return errors.New("the index has fewer entries than its replace bitmap marks")
		}
		position, next := 0, 0
		end, err := walkIndexEnd(shared, hashSize, func(name []byte, mode uint32) {
			visit(name, mode)
			if next < len(replaced) && replaced[next] == position {
				visit(name, modes[next])
				next++
			}
			position++
		})
		if err != nil {
			return err
		}
		if nested, err := linkExtension(shared, end, hashSize); err != nil || nested != nil {
			return errors.New("it is itself split, or damaged")
		}
		return nil
	})
	if err != nil {
		// %v, not %w: a shared index that does not exist must not read as no index at all.
		return fmt.Errorf("split index: its shared index %s: %v", sharedName, err)
	}
	return nil
}

// linkExtension is the payload of the index data's "link" extension (a split index's),
// nil when it has none; its entries end at offset. It reads the extensions as git does,
// and refuses what would let git see another link than bwrapkit (a commit-mode command
// writes the index, and a crafted one hid a submodule's planted .git from the audit):
// two links (git keeps the last), an end-of-entries marker (EOIE) that puts the
// extensions elsewhere (git's threaded load starts there), and an entry offset table
// (IEOT), whose blocks git may parse at other places than one walk from the start.
func linkExtension(data []byte, offset, hashSize int) ([]byte, error) {
	var link []byte
	marker := -1
	err := eachExtension(data, offset, hashSize, func(at int, signature string, payload []byte) error {
		switch signature {
		case "link":
			if link != nil {
				return errors.New("the index has two split-index links")
			}
			link = payload
		case "EOIE":
			if len(payload) < 4 || int(binary.BigEndian.Uint32(payload)) != offset {
				return errors.New("the index's end-of-entries marker (EOIE) does not mark where its entries end")
			}
			marker = at
		case "sdir":
			return errors.New("the index is a sparse index (index.sparse), whose directory entries bwrapkit does not expand; " +
				"turn it off: git config index.sparse false && git sparse-checkout reapply")
		case "IEOT":
			return errors.New("the index has an entry offset table (index.recordOffsetTable), which bwrapkit does not read; " +
				"turn it off and rewrite the index: git config index.recordOffsetTable false && git update-index --force-write-index")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// git does not walk to its end-of-entries marker: it looks for one at a fixed place
	// before the trailer (read_eoie_extension), which may lie inside another extension.
	if at := len(data) - hashSize - eoieSize; at >= 12 && string(data[at:at+4]) == "EOIE" && at != marker {
		return nil, errors.New("the index's end-of-entries marker (EOIE) lies inside another extension")
	}
	return link, nil
}

// eoieSize is an end-of-entries marker's size, header included, as git places it.
const eoieSize = 4 + 4 + 4 + 20

// ewahBits decodes one EWAH-compressed bitmap of at most limit bits as git serialises
// it (ewah/ewah_io.c: its size in bits, its number of 64-bit words, the words, and the
// position of the last marker word, all big-endian) and returns the positions of its set
// bits, ascending, and how many bytes it took. Each marker word says how many words of
// one bit follow (bits 1-32) and of which bit (bit 0), then how many literal words (bits
// 33-63), whose bits count from the least significant.
func ewahBits(data []byte, limit int) (positions []int, consumed int, err error) {
	if len(data) < 12 {
		return nil, 0, errors.New("truncated")
	}
	size := uint64(binary.BigEndian.Uint32(data[0:4]))
	if size > uint64(max(limit, 0)) {
		return nil, 0, fmt.Errorf("%d bits for %d entries", size, limit)
	}
	words := int(binary.BigEndian.Uint32(data[4:8]))
	if words > (len(data)-12)/8 {
		return nil, 0, errors.New("truncated")
	}
	word := func(i int) uint64 { return binary.BigEndian.Uint64(data[8+8*i:]) }
	// Every set bit is checked against size as it is found: a damaged or hostile bitmap
	// (a commit-mode command writes the index) must not make millions of positions.
	var bit uint64
	for i := 0; i < words; {
		marker := word(i)
		i++
		run, literals := ((marker>>1)&0xffffffff)*64, int(marker>>33)
		if bit+run > size+64 || marker&1 != 0 && bit+run > size {
			return nil, 0, errors.New("a run past the bitmap's size")
		}
		if marker&1 != 0 {
			for k := uint64(0); k < run; k++ {
				positions = append(positions, int(bit+k))
			}
		}
		bit += run
		for k := 0; k < literals; k++ {
			if i >= words {
				return nil, 0, errors.New("literal words past its end")
			}
			for value := word(i); value != 0; value &= value - 1 {
				position := bit + uint64(bits.TrailingZeros64(value))
				if position >= size {
					return nil, 0, errors.New("a bit past the bitmap's size")
				}
				positions = append(positions, int(position))
			}
			i++
			bit += 64
		}
	}
	return positions, 8 + 8*words + 4, nil
}
