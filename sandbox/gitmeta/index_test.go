package gitmeta

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// gitIn runs the real git in repo, with no user or system config.
func gitIn(t *testing.T, repo string) func(args ...string) string {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command(gitPath, append([]string{"-C", repo}, args...)...)
		cmd.Env = []string{"HOME=" + repo, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
}

// splitRepository is a repository whose split index records one gitlink, sub, in its
// shared part.
func splitRepository(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	git := gitIn(t, repo)
	git("init", "-q")
	git("update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("1", 40)+",sub")
	git("update-index", "--split-index")
	return repo
}

// TestSplitIndexGitlinks: with a split index (core.splitIndex) most entries live in the
// shared index beside .git/index; every gitlink real git records is found wherever it
// lives: in the shared part only, added after the split, or replacing a file's entry
// (whose name git strips from the split part). A gitlink the split part deletes is still
// reported (more protection, never less), and git agrees on the rest.
func TestSplitIndexGitlinks(t *testing.T) {
	for _, version := range []string{"2", "4"} {
		t.Run("v"+version, func(t *testing.T) {
			repo := t.TempDir()
			git := gitIn(t, repo)
			git("init", "-q")
			id := strings.Repeat("1", 40)
			for _, name := range []string{"a", "b", "becomes-sub", "z"} {
				os.WriteFile(filepath.Join(repo, name), []byte(name), 0o644)
			}
			git("add", ".")
			for _, sub := range []string{"libs/before", "libs/removed"} {
				git("update-index", "--add", "--cacheinfo", "160000,"+id+","+sub)
			}
			git("update-index", "--index-version", version)
			git("update-index", "--split-index")
			git("update-index", "--add", "--cacheinfo", "160000,"+id+",libs/after")
			git("update-index", "--cacheinfo", "160000,"+id+",becomes-sub")
			git("update-index", "--force-remove", "libs/removed")
			os.WriteFile(filepath.Join(repo, "b"), []byte("changed"), 0o644)
			git("add", "b")

			index := filepath.Join(repo, ".git", "index")
			data, _ := os.ReadFile(index)
			if extensions, _ := indexExtensions(data, 20); !slices.Contains(extensions, "link") {
				t.Fatalf("git wrote no split index (extensions %v)", extensions)
			}
			got, err := indexGitlinks(index)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"becomes-sub", "libs/after", "libs/before", "libs/removed"}
			if !slices.Equal(got, want) {
				t.Errorf("gitlinks %v, want %v", got, want)
			}
			// git's own view: each of its gitlinks is among those found.
			for _, line := range strings.Split(strings.TrimSpace(git("ls-files", "--stage")), "\n") {
				if mode, rest, _ := strings.Cut(line, " "); mode == "160000" {
					if _, path, _ := strings.Cut(rest, "\t"); !slices.Contains(got, path) {
						t.Errorf("git records the gitlink %s, not found", path)
					}
				}
			}
			for prefix, want := range map[string]bool{"libs/": true, "a": true, "nothing/": false} {
				if got, err := (*Indexes)(nil).tracks(index, prefix); got != want || err != nil {
					t.Errorf("tracks %s: %v, %v", prefix, got, err)
				}
			}
		})
	}
}

// TestSplitIndexWithoutItsSharedPartIsAnError: a split index whose shared part is gone or
// is another file is refused (its submodules are unknown), never read as one without any.
func TestSplitIndexWithoutItsSharedPartIsAnError(t *testing.T) {
	repo := splitRepository(t)
	shared, _ := filepath.Glob(filepath.Join(repo, ".git", "sharedindex.*"))
	if len(shared) != 1 {
		t.Fatalf("shared indexes %v", shared)
	}
	index := filepath.Join(repo, ".git", "index")

	data, _ := os.ReadFile(shared[0])
	os.WriteFile(shared[0], append(data[:len(data)-1:len(data)-1], data[len(data)-1]^1), 0o644)
	if got, err := indexGitlinks(index); err == nil {
		t.Errorf("a shared index that is not the one named: %v, no error", got)
	}
	os.Remove(shared[0])
	if got, err := indexGitlinks(index); err == nil || !strings.Contains(err.Error(), filepath.Base(shared[0])) {
		t.Errorf("no shared index: %v, %v", got, err)
	}
	// Below the repository's top the enclosing index is read to tell whether the workdir
	// is tracked: unreadable, the run is refused (git might read it, and enter the
	// submodules inside), not taken for an untracked directory.
	workdir := filepath.Join(repo, "sub")
	os.MkdirAll(workdir, 0o755)
	if got, err := EnclosingGitDir(workdir, nil); err == nil || !strings.Contains(err.Error(), "index") {
		t.Errorf("EnclosingGitDir without the shared index: %q, %v", got, err)
	}
}

// withExtension is index data with an extension added before its existing ones (first)
// or after them.
func withExtension(t *testing.T, data []byte, signature string, payload []byte, first bool) []byte {
	t.Helper()
	end, err := walkIndexEnd(data, 20, nil)
	if err != nil {
		t.Fatal(err)
	}
	extension := append(binary.BigEndian.AppendUint32([]byte(signature), uint32(len(payload))), payload...)
	at := len(data) - 20
	if first {
		at = end
	}
	return slices.Concat(data[:at], extension, data[at:])
}

// TestIndexExtensionsAreReadAsGitReadsThem: a crafted index (a commit-mode command writes
// one) must not show git another split-index link than bwrapkit: a second link (git keeps
// the last; bwrapkit kept the first, an empty decoy, and missed a planted submodule), an
// end-of-entries marker that puts the extensions elsewhere, and an entry offset table are
// refused. A marker that agrees is read.
func TestIndexExtensionsAreReadAsGitReadsThem(t *testing.T) {
	repo := splitRepository(t)
	index := filepath.Join(repo, ".git", "index")
	data, _ := os.ReadFile(index)
	end, _ := walkIndexEnd(data, 20, nil)
	withShared := func(name string, fn func([]byte) error) error {
		shared, err := os.ReadFile(filepath.Join(repo, ".git", name))
		if err != nil {
			return err
		}
		return fn(shared)
	}
	gitlinks := func(data []byte) ([]string, error) {
		var links []string
		err := scanIndexData(data, 20, withShared, func(name []byte, mode uint32) {
			if mode == 0o160000 {
				links = append(links, string(name))
			}
		})
		return links, err
	}
	if links, err := gitlinks(data); err != nil || !slices.Equal(links, []string{"sub"}) {
		t.Fatalf("the split index as git wrote it: %v, %v", links, err)
	}
	agreeing := binary.BigEndian.AppendUint32(nil, uint32(end))
	if links, err := gitlinks(withExtension(t, data, "EOIE", append(agreeing, make([]byte, 20)...), true)); err != nil || !slices.Equal(links, []string{"sub"}) {
		t.Errorf("an end-of-entries marker that agrees: %v, %v", links, err)
	}
	for name, crafted := range map[string][]byte{
		"an empty link first":     withExtension(t, data, "link", make([]byte, 20), true),
		"a second link last":      withExtension(t, data, "link", make([]byte, 20), false),
		"an end marker elsewhere": withExtension(t, data, "EOIE", append(binary.BigEndian.AppendUint32(nil, uint32(end+8)), make([]byte, 20)...), true),
		"an entry offset table":   withExtension(t, data, "IEOT", []byte{0, 0, 0, 1, 0, 0, 0, 12, 0, 0, 0, 1}, true),
		"an end marker too short": withExtension(t, data, "EOIE", []byte{0, 0}, true),
	} {
		if links, err := gitlinks(crafted); err == nil {
			t.Errorf("%s: read as %v, no error", name, links)
		}
	}
}

// TestEnclosingGitDirSeesTheSharedIndex: a subdirectory whose files the split index keeps
// in its shared part is tracked, so the enclosing repository is shown (and its submodules
// below the workdir protected).
func TestEnclosingGitDirSeesTheSharedIndex(t *testing.T) {
	repo := t.TempDir()
	git := gitIn(t, repo)
	git("init", "-q")
	workdir := filepath.Join(repo, "project")
	os.MkdirAll(workdir, 0o755)
	os.WriteFile(filepath.Join(workdir, "file"), []byte("x"), 0o644)
	git("add", ".")
	git("update-index", "--split-index")
	os.WriteFile(filepath.Join(repo, "other"), []byte("y"), 0o644)
	git("add", "other")
	if got, err := EnclosingGitDir(workdir, nil); got != filepath.Join(repo, ".git") || err != nil {
		t.Errorf("EnclosingGitDir %q, %v", got, err)
	}
}

// TestIndexesReadEachIndexOnce: one policy's checks share each index's one read.
func TestIndexesReadEachIndexOnce(t *testing.T) {
	repo := t.TempDir()
	git := gitIn(t, repo)
	git("init", "-q")
	git("update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("1", 40)+",sub")
	index := filepath.Join(repo, ".git", "index")
	indexes := &Indexes{}
	if first, err := indexes.links(index); err != nil || !slices.Equal(first, []string{"sub"}) {
		t.Fatal(first, err)
	}
	os.Remove(index)
	if again, err := indexes.links(index); err != nil || !slices.Equal(again, []string{"sub"}) {
		t.Errorf("the second read of one policy read the file again: %v, %v", again, err)
	}
	var fresh *Indexes
	if got, err := fresh.links(index); err != nil || len(got) != 0 {
		t.Errorf("a nil Indexes kept an index: %v, %v", got, err)
	}
}

// ewahOf encodes bits as git's ewah_serialize does, with every word a literal.
func ewahOf(size uint32, words ...uint64) []byte {
	var out []byte
	out = binary.BigEndian.AppendUint32(out, size)
	out = binary.BigEndian.AppendUint32(out, uint32(1+len(words)))
	out = binary.BigEndian.AppendUint64(out, uint64(len(words))<<33) // a marker: no run, then the literals
	for _, word := range words {
		out = binary.BigEndian.AppendUint64(out, word)
	}
	return binary.BigEndian.AppendUint32(out, 0)
}

func TestEwahBits(t *testing.T) {
	positions, consumed, err := ewahBits(append(ewahOf(130, 1<<3|1<<63, 0, 1<<1), 0xff), 200)
	if err != nil || !slices.Equal(positions, []int{3, 63, 129}) || consumed != 8+4*8+4 {
		t.Errorf("literals: %v, %d, %v", positions, consumed, err)
	}
	// A run of ones: a marker with its running bit, two words long.
	run := binary.BigEndian.AppendUint32(nil, 128)
	run = binary.BigEndian.AppendUint32(run, 1)
	run = binary.BigEndian.AppendUint64(run, 2<<1|1)
	run = binary.BigEndian.AppendUint32(run, 0)
	if positions, _, err := ewahBits(run, 128); err != nil || len(positions) != 128 || positions[127] != 127 {
		t.Errorf("run: %d positions, %v", len(positions), err)
	}
	for name, data := range map[string][]byte{
		"short":                               ewahOf(64, 1)[:10],
		"words past its end":                  ewahOf(64, 1)[:16],
		"a bit past size":                     ewahOf(3, 1<<5),
		"more bits than entries":              ewahOf(300, 1),
		"set bits past size, word after word": ewahOf(64, slices.Repeat([]uint64{^uint64(0)}, 1000)...),
		"literals past the words": func() []byte {
			d := ewahOf(64, 1)
			binary.BigEndian.PutUint64(d[8:], 5<<33)
			return d
		}(),
		"a run past size": func() []byte {
			d := bytes.Clone(run)
			binary.BigEndian.PutUint64(d[8:], 1<<32|1)
			return d
		}(),
	} {
		if positions, _, err := ewahBits(data, 200); err == nil {
			t.Errorf("%s: %v, no error", name, positions)
		}
	}
}

// FuzzEwahBits: no bitmap, however damaged, makes the decoder panic, hang or claim more
// bytes than it was given.
func FuzzEwahBits(f *testing.F) {
	f.Add(ewahOf(130, 1<<3|1<<63, 0, 1<<1), 200)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		if limit < 0 || limit > 1<<20 {
			return
		}
		if _, consumed, err := ewahBits(data, limit); err == nil && consumed > len(data) {
			t.Errorf("consumed %d of %d bytes", consumed, len(data))
		}
	})
}

// TestAuditOfAnIndexItCannotRead: after a commit-mode run whose command left an index
// bwrapkit cannot read (here, crafted with a decoy link that git would not use), every
// .git below the top that was not read-only during the run is moved aside, and the
// failure is said; a protected one stays.
func TestAuditOfAnIndexItCannotRead(t *testing.T) {
	workdir := t.TempDir()
	git := gitIn(t, workdir)
	git("init", "-q")
	for _, sub := range []string{"planted", "kept", "deep/er"} {
		os.MkdirAll(filepath.Join(workdir, sub), 0o755)
		gitIn(t, filepath.Join(workdir, sub))("init", "-q")
	}
	git("update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("1", 40)+",planted")
	git("update-index", "--split-index")
	index := filepath.Join(workdir, ".git", "index")
	data, _ := os.ReadFile(index)
	os.WriteFile(index, withExtension(t, data, "link", make([]byte, 20), true), 0o644)

	// All three were there before the run: only the unreadable index moves them.
	kept := filepath.Join(workdir, "kept", ".git")
	moved, err := Audit(workdir, []string{filepath.Join(workdir, ".git"), kept}, RepositoriesBelow(workdir))
	if err == nil || !strings.Contains(err.Error(), "moved aside") {
		t.Errorf("Audit of a crafted index: %v", err)
	}
	for _, sub := range []string{"planted", "deep/er"} {
		path := filepath.Join(workdir, sub, ".git")
		if exists(path) || !exists(path+".bwrapkit-quarantine") {
			t.Errorf("%s was not moved aside (moved: %v)", path, moved)
		}
	}
	if !exists(kept) || !exists(filepath.Join(workdir, ".git", "HEAD")) {
		t.Errorf("a protected .git was moved: %v", moved)
	}
}

// rawEntry is one entry for indexV2: its mode and name, extended flags (a version 3
// field, which git reads in any version) and the name length its flags record (0: the
// name's own).
type rawEntry struct {
	mode     uint32
	name     string
	extended bool
	length   int
}

// indexV2 writes a version 2 index of entries as git lays one out, with its SHA-1 trailer.
func indexV2(entries ...rawEntry) []byte {
	data := binary.BigEndian.AppendUint32([]byte("DIRC"), 2)
	data = binary.BigEndian.AppendUint32(data, uint32(len(entries)))
	for _, e := range entries {
		start := len(data)
		data = append(data, make([]byte, 24)...)
		data = binary.BigEndian.AppendUint32(data, e.mode)
		data = append(data, make([]byte, 12)...)
		data = append(data, bytes.Repeat([]byte{0x11}, 20)...)
		length := e.length
		if length == 0 {
			length = min(len(e.name), 0xfff)
		}
		flags := uint16(length)
		if e.extended {
			flags |= 0x4000
		}
		data = binary.BigEndian.AppendUint16(data, flags)
		if e.extended {
			data = binary.BigEndian.AppendUint16(data, 0)
		}
		data = append(data, e.name...)
		data = append(data, make([]byte, 8-(len(data)-start)%8)...)
	}
	sum := sha1.Sum(data)
	return append(data, sum[:]...)
}

// TestIndexEntriesAreReadAsGitReadsThem: an index a commit-mode command wrote is read
// entry by entry as git reads it (the name's length from its flags, extended flags in a
// version 2 index), or refused; a submodule path git would follow out of the work tree,
// and a sparse index's directory entries (which git expands from trees), are refused.
// Each of these hid a planted submodule from the audit, and git's own reading is the
// reference where it accepts the index.
func TestIndexEntriesAreReadAsGitReadsThem(t *testing.T) {
	repo := t.TempDir()
	git := gitIn(t, repo)
	git("init", "-q")
	index := filepath.Join(repo, ".git", "index")
	write := func(data []byte) { os.WriteFile(index, data, 0o644) }

	write(indexV2(rawEntry{mode: 0o100644, name: "a"}, rawEntry{mode: 0o160000, name: "sub", extended: true}))
	if got, err := indexGitlinks(index); err != nil || !slices.Equal(got, []string{"sub"}) {
		t.Errorf("extended flags in a version 2 index: %v, %v", got, err)
	}
	if out := git("ls-files", "--stage"); !strings.Contains(out, "160000 1111111111111111111111111111111111111111 0\tsub\n") {
		t.Errorf("git reads the same index as:\n%s", out)
	}
	for name, data := range map[string][]byte{
		"a name shorter than its flags say": indexV2(rawEntry{mode: 0o160000, name: "sub/x", length: 3}),
		"a name longer than its flags say":  indexV2(rawEntry{mode: 0o160000, name: "sub", length: 5}),
		"unknown extended flags": func() []byte {
			data := indexV2(rawEntry{mode: 0o160000, name: "sub", extended: true})
			data[12+62] = 0x01
			return data
		}(),
		"a sparse directory entry":       indexV2(rawEntry{mode: 0o040000, name: "dir/"}),
		"an absolute submodule":          indexV2(rawEntry{mode: 0o160000, name: "/srv/elsewhere/sub"}),
		"a submodule up the tree":        indexV2(rawEntry{mode: 0o160000, name: "../sub"}),
		"a submodule inside a .git":      indexV2(rawEntry{mode: 0o160000, name: "a/.GIT/sub"}),
		"a submodule at an unclean path": indexV2(rawEntry{mode: 0o160000, name: "a//sub"}),
	} {
		write(data)
		if got, err := indexGitlinks(index); err == nil {
			t.Errorf("%s: read as %v, no error", name, got)
		}
	}
	data := indexV2(rawEntry{mode: 0o100644, name: "a"})
	write(withExtension(t, data, "sdir", nil, true))
	if got, err := indexGitlinks(index); err == nil {
		t.Errorf("a sparse index's extension: read as %v, no error", got)
	}
}

// TestVersion4PrefixesAreGitsVarints: a version 4 index strips each path's shared prefix
// with a number in git's own varint, which encoding/binary's agrees with only below 128:
// a real index whose paths share longer prefixes is read, and a crafted one whose prefix
// reads 0 one way and 128 the other (git's) is read as git reads it.
func TestVersion4PrefixesAreGitsVarints(t *testing.T) {
	repo := t.TempDir()
	git := gitIn(t, repo)
	git("init", "-q")
	long := strings.Repeat("d", 200)
	git("update-index", "--add", "--cacheinfo", "100644,"+strings.Repeat("2", 40)+","+long+"/file")
	git("update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("1", 40)+","+long+"/sub")
	git("update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("1", 40)+",z")
	git("update-index", "--index-version", "4")
	index := filepath.Join(repo, ".git", "index")
	if got, err := indexGitlinks(index); err != nil || !slices.Equal(got, []string{long + "/sub", "z"}) {
		t.Errorf("a real version 4 index, prefixes of 200 bytes: %v, %v", got, err)
	}

	// Two entries: 128 a's, then a gitlink whose prefix bytes 0x80 0x00 strip all 128.
	data := binary.BigEndian.AppendUint32([]byte("DIRC"), 4)
	data = binary.BigEndian.AppendUint32(data, 2)
	for _, e := range []struct {
		mode  uint32
		flags uint16
		name  []byte
	}{{0o100644, 128, append([]byte{0}, strings.Repeat("a", 128)...)}, {0o160000, 0x0fff, append([]byte{0x80, 0x00}, "sub"...)}} {
		data = append(data, make([]byte, 24)...)
		data = binary.BigEndian.AppendUint32(data, e.mode)
		data = append(data, make([]byte, 12)...)
		data = append(data, bytes.Repeat([]byte{0x11}, 20)...)
		data = binary.BigEndian.AppendUint16(data, e.flags)
		data = append(append(data, e.name...), 0)
	}
	sum := sha1.Sum(data)
	os.WriteFile(index, append(data, sum[:]...), 0o644)
	if out := git("ls-files", "--stage"); !strings.Contains(out, "\tsub\n") {
		t.Fatalf("git reads the crafted index as:\n%s", out)
	}
	if got, err := indexGitlinks(index); err != nil || !slices.Equal(got, []string{"sub"}) {
		t.Errorf("the crafted version 4 index: %v, %v (git reads the gitlink sub)", got, err)
	}
}

// TestAnEndMarkerWhereGitLooksIsTheWalks: git finds an index's end-of-entries marker at a
// fixed place before the trailer, not by walking the extensions; one that lies there
// inside another extension (where git's threaded load would take it) is refused.
func TestAnEndMarkerWhereGitLooksIsTheWalks(t *testing.T) {
	data := indexV2(rawEntry{mode: 0o100644, name: "a"})
	end, _ := walkIndexEnd(data, 20, nil)
	hidden := append([]byte("EOIE"), make([]byte, 28)...)
	binary.BigEndian.PutUint32(hidden[4:], 24)
	binary.BigEndian.PutUint32(hidden[8:], uint32(end))
	crafted := withExtension(t, data, "ZZZZ", append(make([]byte, 16), hidden...), false)
	if err := scanIndexData(crafted, 20, noShared, ignore); err == nil {
		t.Errorf("an end marker inside another extension: no error")
	}
	if err := scanIndexData(withExtension(t, data, "EOIE", hidden[8:], false), 20, noShared, ignore); err != nil {
		t.Errorf("an end marker where git writes it: %v", err)
	}
}

// TestAuditGoesOnPastWhatItCannotMove: a planted .git the audit cannot move aside (reached
// through a symlink the command left) is said, and the others are still moved: the first
// one once ended the audit, and a later planted .git stayed for the host's git status.
func TestAuditGoesOnPastWhatItCannotMove(t *testing.T) {
	workdir := t.TempDir()
	gitIn(t, workdir)("init", "-q")
	for _, sub := range []string{"b/sub", "z"} {
		os.MkdirAll(filepath.Join(workdir, sub), 0o755)
		gitIn(t, filepath.Join(workdir, sub))("init", "-q")
	}
	os.Symlink("b", filepath.Join(workdir, "a"))
	os.WriteFile(filepath.Join(workdir, ".git", "index"), indexV2(rawEntry{mode: 0o160000, name: "a/sub"}, rawEntry{mode: 0o160000, name: "z"}), 0o644)
	moved, err := Audit(workdir, []string{filepath.Join(workdir, ".git")}, nil)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(workdir, "a", "sub", ".git")) {
		t.Errorf("the .git behind a symlink was not said: %v", err)
	}
	if exists(filepath.Join(workdir, "z", ".git")) || len(moved) != 2 {
		t.Errorf("the planted z/.git was not moved aside after it: moved %v, %v", moved, err)
	}
}

// TestAuditMovesAsideARepositoryTheRunMade: a .git below the top that was not there when
// the run began is moved aside whatever the index says (a command commits a submodule on
// a branch and leaves the index clean: the host enters it once the branch is merged);
// one that was there keeps its .git. A directory the command locked is opened to look,
// and locked again after.
func TestAuditMovesAsideARepositoryTheRunMade(t *testing.T) {
	workdir := t.TempDir()
	gitIn(t, workdir)("init", "-q")
	os.MkdirAll(filepath.Join(workdir, "vendor", "x"), 0o755)
	gitIn(t, filepath.Join(workdir, "vendor", "x"))("init", "-q")
	before := RepositoriesBelow(workdir)
	protect := append([]string{filepath.Join(workdir, ".git")}, NestedRepositories(workdir)...)
	if _, ok := before[filepath.Join(workdir, "vendor", "x", ".git")]; !ok || len(protect) != 2 {
		t.Fatalf("repositories before: %v, protected %v", before, protect)
	}
	for _, sub := range []string{"z", "locked/deep"} {
		os.MkdirAll(filepath.Join(workdir, sub), 0o755)
		gitIn(t, filepath.Join(workdir, sub))("init", "-q")
	}
	locked := filepath.Join(workdir, "locked")
	os.Chmod(locked, 0o100|fs.ModeSetgid)
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	moved, err := Audit(workdir, protect, before)
	if err != nil || len(moved) != 2 || exists(filepath.Join(workdir, "z", ".git")) || exists(filepath.Join(locked, "deep", ".git")) {
		t.Errorf("the repositories the run made: moved %v, %v", moved, err)
	}
	if !exists(filepath.Join(workdir, "vendor", "x", ".git")) {
		t.Errorf("the repository that was there before was moved: %v", moved)
	}
	if info, err := os.Lstat(locked); err != nil || info.Mode()&(fs.ModePerm|fs.ModeSetgid) != 0o100|fs.ModeSetgid {
		t.Errorf("the locked directory was left open: %v, %v", info.Mode(), err)
	}
}

// TestNestedRepositoriesLeaveLinksAndCrowdsToTheInventory: a nested .git that is a symlink
// is not bound (that would bind what it leads to; a commit-mode run with one was refused),
// nor are nested repositories past maxNested (bwrap's argument limit refused the run):
// the audit's inventory keeps each one that stayed, and moves aside one replaced.
func TestNestedRepositoriesLeaveLinksAndCrowdsToTheInventory(t *testing.T) {
	workdir := t.TempDir()
	os.MkdirAll(filepath.Join(workdir, ".git"), 0o755)
	os.WriteFile(filepath.Join(workdir, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.MkdirAll(filepath.Join(workdir, "real.git"), 0o755)
	os.MkdirAll(filepath.Join(workdir, "linked"), 0o755)
	os.Symlink("../real.git", filepath.Join(workdir, "linked", ".git"))
	os.MkdirAll(filepath.Join(workdir, "plain", ".git"), 0o755)
	if got := NestedRepositories(workdir); !slices.Equal(got, []string{filepath.Join(workdir, "plain", ".git")}) {
		t.Errorf("nested repositories bound: %v", got)
	}
	before := RepositoriesBelow(workdir)
	protect := []string{filepath.Join(workdir, ".git"), filepath.Join(workdir, "plain", ".git")}
	if moved, err := Audit(workdir, protect, before); err != nil || len(moved) != 0 {
		t.Errorf("an unchanged symlinked .git: moved %v, %v", moved, err)
	}
	os.Remove(filepath.Join(workdir, "linked", ".git"))
	os.Symlink("../elsewhere.git", filepath.Join(workdir, "linked", ".git"))
	if moved, err := Audit(workdir, protect, before); err != nil || len(moved) != 1 {
		t.Errorf("a symlinked .git the run replaced: moved %v, %v", moved, err)
	}
	crowd := t.TempDir()
	for i := range maxNested + 1 {
		os.MkdirAll(filepath.Join(crowd, "vendor", strconv.Itoa(i), ".git"), 0o755)
	}
	if got := NestedRepositories(crowd); len(got) != 0 {
		t.Errorf("%d nested repositories bound, past the bound of %d", len(got), maxNested)
	}
}

// TestCommitModeKeepsGitdirsAndWorktreesReadOnly: a nested repository whose .git is a
// gitfile has the gitdir it names (inside the project, not through a symlink) bound
// read-only too, and each linked worktree's commondir, gitdir and config.worktree stay
// read-only in commit mode (a command armed either and the host's git ran its fsmonitor),
// while the rest of .git/worktrees stays writable for commits in those worktrees.
func TestCommitModeKeepsGitdirsAndWorktreesReadOnly(t *testing.T) {
	workdir := t.TempDir()
	git := gitIn(t, workdir)
	git("init", "-q")
	git("commit", "-q", "--allow-empty", "-m", "first")
	git("worktree", "add", "-q", filepath.Join(workdir, ".wt", "feat"))
	git("init", "-q", "--separate-git-dir", filepath.Join(workdir, "subgd"), "sub")
	os.MkdirAll(filepath.Join(workdir, "store", "linkedgd"), 0o755)
	os.Symlink("store", filepath.Join(workdir, "storelink"))
	os.MkdirAll(filepath.Join(workdir, "linkedsub"), 0o755)
	os.WriteFile(filepath.Join(workdir, "linkedsub", ".git"), []byte("gitdir: ../storelink/linkedgd\n"), 0o644)
	nested := NestedRepositories(workdir)
	for _, want := range []string{filepath.Join(workdir, "sub", ".git"), filepath.Join(workdir, "subgd")} {
		if !slices.Contains(nested, want) {
			t.Errorf("nested repositories %v lack %s", nested, want)
		}
	}
	if slices.Contains(nested, filepath.Join(workdir, ".git", "worktrees", "feat")) {
		t.Errorf("a linked worktree's gitdir inside the project is bound whole (its commits fail): %v", nested)
	}
	if slices.Contains(nested, filepath.Join(workdir, "storelink", "linkedgd")) {
		t.Errorf("a gitdir named through a symlink is bound (every run was refused): %v", nested)
	}
	kept, err := CommitEntries(workdir, []string{filepath.Join(workdir, ".git")})
	worktree := filepath.Join(workdir, ".git", "worktrees", "feat")
	if err != nil || !slices.Contains(kept, filepath.Join(worktree, "commondir")) || !slices.Contains(kept, filepath.Join(worktree, "gitdir")) {
		t.Errorf("commit mode's read-only parts %v, %v", kept, err)
	}
	if slices.Contains(kept, filepath.Join(workdir, ".git", "worktrees")) || slices.Contains(kept, worktree) {
		t.Errorf("a linked worktree's own gitdir is read-only (its commits fail): %v", kept)
	}
}

// TestAuditSeesWhatRunsEditedInPlace: for a nested repository no bind kept read-only, the
// audit's inventory sees an edit in place of each file a host git runs a program by (the
// config, a hook, the common directory's config, a sample renamed to run, a new
// config.worktree), through a symlinked .git and a gitfile alike; and it sees no change in
// what a commit writes.
func TestAuditSeesWhatRunsEditedInPlace(t *testing.T) {
	makeGitDir := func(dir string) {
		for _, sub := range []string{"hooks", "objects", "refs"} {
			if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		os.WriteFile(filepath.Join(dir, "config"), []byte("[core]\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "hooks", "pre-commit"), []byte("#!/bin/sh\n"), 0o755)
		os.WriteFile(filepath.Join(dir, "hooks", "post-checkout.sample"), []byte("#!/bin/sh\n"), 0o755)
	}
	appendTo := func(path string) func(string) {
		return func(string) {
			file, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			file.WriteString("\tfsmonitor = touch /nonexistent/pwned\n")
			file.Close()
		}
	}
	var g0 string // a path three levels below the workdir of the case running
	for _, tc := range []struct {
		name  string
		entry string // below the workdir
		act   func(gitdir string)
		moved bool
	}{
		{"config edited in place", "plain/.git", func(g string) { appendTo(filepath.Join(g, "config"))("") }, true},
		{"hook edited in place", "plain/.git", func(g string) { appendTo(filepath.Join(g, "hooks", "pre-commit"))("") }, true},
		{"sample renamed to run", "plain/.git", func(g string) {
			os.Rename(filepath.Join(g, "hooks", "post-checkout.sample"), filepath.Join(g, "hooks", "post-checkout"))
		}, true},
		{"config.worktree made", "plain/.git", func(g string) { os.WriteFile(filepath.Join(g, "config.worktree"), []byte("[core]\n"), 0o644) }, true},
		// A config may name a sample (core.fsmonitor = .git/hooks/fsmonitor-watchman.sample).
		{"sample edited in place", "plain/.git", func(g string) { appendTo(filepath.Join(g, "hooks", "post-checkout.sample"))("") }, true},
		// A config's include.path = config.local, missing before the run.
		{"an include made beside the config", "plain/.git", func(g string) { os.WriteFile(filepath.Join(g, "config.local"), []byte("[core]\n"), 0o644) }, true},
		// Broken, git no longer takes .git for a repository, and looks at the work tree
		// itself for a bare one the command could plant.
		{"HEAD broken", "plain/.git", func(g string) { os.WriteFile(filepath.Join(g, "HEAD"), []byte("garbage\n"), 0o644) }, true},
		{"HEAD moved to another branch", "plain/.git", func(g string) { os.WriteFile(filepath.Join(g, "HEAD"), []byte("ref: refs/heads/topic\n"), 0o644) }, false},
		// A symlinked .git leading to a gitfile: a trailing blank names another gitdir to
		// git, which reads the path up to the line end only.
		{"gitfile behind a symlink given a trailing blank", "viafile/.git", func(string) {
			os.WriteFile(filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(g0))), "gitfiles", "lib"), []byte("gitdir: ../store/wt.git \n"), 0o644)
		}, true},
		// A gitfile that names its gitdir with a trailing blank (there before the run):
		// git opens "store/blank.git ", which the command makes, armed.
		{"a gitdir named with a trailing blank made", "blank/.git", func(string) {
			makeGitDir(filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(g0))), "store", "blank.git "))
		}, true},
		{"a commit's writes", "plain/.git", func(g string) {
			os.WriteFile(filepath.Join(g, "objects", "x"), []byte("blob"), 0o444)
			os.WriteFile(filepath.Join(g, "index.lock"), []byte("DIRC"), 0o644)
			os.Rename(filepath.Join(g, "index.lock"), filepath.Join(g, "index"))
			os.WriteFile(filepath.Join(g, "HEAD"), []byte("ref: refs/heads/other\n"), 0o644)
		}, false},
		{"through a symlinked .git", "linked/.git", func(g string) { appendTo(filepath.Join(g, "config"))("") }, true},
		{"through a gitfile", "wt/.git", func(g string) { appendTo(filepath.Join(g, "config"))("") }, true},
		{"the common directory's config", "common/.git", func(g string) { appendTo(filepath.Join(g, "..", "..", "store", "main.git", "config"))("") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			workdir := t.TempDir()
			makeGitDir(filepath.Join(workdir, ".git"))
			makeGitDir(filepath.Join(workdir, "plain", ".git"))
			makeGitDir(filepath.Join(workdir, "store", "linked.git"))
			os.MkdirAll(filepath.Join(workdir, "linked"), 0o755)
			os.Symlink("../store/linked.git", filepath.Join(workdir, "linked", ".git"))
			makeGitDir(filepath.Join(workdir, "store", "wt.git"))
			os.MkdirAll(filepath.Join(workdir, "wt"), 0o755)
			os.WriteFile(filepath.Join(workdir, "wt", ".git"), []byte("gitdir: ../store/wt.git\n"), 0o644)
			makeGitDir(filepath.Join(workdir, "store", "main.git"))
			makeGitDir(filepath.Join(workdir, "common", ".git"))
			os.WriteFile(filepath.Join(workdir, "common", ".git", "commondir"), []byte("../../store/main.git\n"), 0o644)
			os.MkdirAll(filepath.Join(workdir, "gitfiles"), 0o755)
			os.WriteFile(filepath.Join(workdir, "gitfiles", "lib"), []byte("gitdir: ../store/wt.git\n"), 0o644)
			os.MkdirAll(filepath.Join(workdir, "viafile"), 0o755)
			os.Symlink("../gitfiles/lib", filepath.Join(workdir, "viafile", ".git"))
			makeGitDir(filepath.Join(workdir, "store", "blank.git"))
			os.MkdirAll(filepath.Join(workdir, "blank"), 0o755)
			os.WriteFile(filepath.Join(workdir, "blank", ".git"), []byte("gitdir: ../store/blank.git \n"), 0o644)
			g0 = filepath.Join(workdir, "plain", ".git", "x")
			before := RepositoriesBelow(workdir)
			gitdir := map[string]string{
				"plain/.git":   filepath.Join(workdir, "plain", ".git"),
				"linked/.git":  filepath.Join(workdir, "store", "linked.git"),
				"wt/.git":      filepath.Join(workdir, "store", "wt.git"),
				"common/.git":  filepath.Join(workdir, "common", ".git"),
				"viafile/.git": filepath.Join(workdir, "store", "wt.git"),
				"blank/.git":   filepath.Join(workdir, "store", "blank.git"),
			}[tc.entry]
			time.Sleep(10 * time.Millisecond) // a change time the file system tells apart
			tc.act(gitdir)
			moved, err := Audit(workdir, []string{filepath.Join(workdir, ".git")}, before)
			if err != nil {
				t.Fatal(err)
			}
			entry := filepath.Join(workdir, filepath.FromSlash(tc.entry))
			got := slices.ContainsFunc(moved, func(m string) bool { return strings.HasPrefix(m, entry+" -> ") })
			if got != tc.moved {
				t.Errorf("%s moved aside: %v, want %v (moved: %v)", tc.entry, got, tc.moved, moved)
			}
			for _, m := range moved {
				// Another entry that leads to the same git directory goes too (the
				// gitfile and the symlink to a gitfile both name store/wt.git).
				sameGitdir := tc.entry == "wt/.git" && strings.HasPrefix(m, filepath.Join(workdir, "viafile", ".git")+" -> ")
				// The git directories under store/ are bare repositories to git run in
				// them, so the one armed loses its HEAD as well.
				armedBare := strings.HasPrefix(m, filepath.Join(workdir, "store")+"/") && strings.Contains(m, "/HEAD -> ")
				if !strings.HasPrefix(m, entry+" -> ") && !sameGitdir && !armedBare {
					t.Errorf("others moved too: %v", moved)
				}
			}
		})
	}
}

// TestAuditTakesHEADFromAPlantedBareRepository: a command that spoils the top .git's
// HEAD makes git take the work tree itself for a bare repository, which the command
// planted beside it (HEAD, objects/, refs/, a config with a fsmonitor); in a nested
// repository's work tree too. The audit takes the planted HEAD away and says the top's is
// broken; a bare repository that was there before and did not change keeps its HEAD.
func TestAuditTakesHEADFromAPlantedBareRepository(t *testing.T) {
	workdir := t.TempDir()
	plant := func(dir string) {
		for _, sub := range []string{"objects", "refs"} {
			os.MkdirAll(filepath.Join(dir, sub), 0o755)
		}
		os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "config"), []byte("[core]\n\tbare = false\n\tworktree = .\n\tfsmonitor = touch /nonexistent/pwned\n"), 0o644)
	}
	plant(filepath.Join(workdir, ".git"))
	plant(filepath.Join(workdir, "fixtures", "kept.git")) // a bare repository of the project's own
	os.MkdirAll(filepath.Join(workdir, "nested", ".git"), 0o755)
	plant(filepath.Join(workdir, "nested", ".git"))
	before := RepositoriesBelow(workdir)
	time.Sleep(10 * time.Millisecond)
	os.WriteFile(filepath.Join(workdir, ".git", "HEAD"), []byte("garbage\n"), 0o644)
	plant(workdir)
	os.WriteFile(filepath.Join(workdir, "nested", ".git", "HEAD"), []byte("garbage\n"), 0o644)
	plant(filepath.Join(workdir, "nested"))
	moved, err := Audit(workdir, []string{filepath.Join(workdir, ".git")}, before)
	if err == nil || !strings.Contains(err.Error(), "HEAD is no longer one git accepts") {
		t.Errorf("the top's broken HEAD was not said: %v", err)
	}
	for _, head := range []string{filepath.Join(workdir, "HEAD"), filepath.Join(workdir, "nested", "HEAD")} {
		if !slices.Contains(moved, head+" -> "+head+".bwrapkit-quarantine") {
			t.Errorf("%s was not taken away: %v", head, moved)
		}
	}
	if _, err := os.Stat(filepath.Join(workdir, "fixtures", "kept.git", "HEAD")); err != nil {
		t.Errorf("an unchanged bare repository lost its HEAD: %v (moved %v)", err, moved)
	}
}

// TestRelockActsOnTheDirectoryItOpened: the audit opens an unreadable directory to look
// inside and locks it again after; a concurrent run that swaps the directory for a
// symlink meanwhile must not have the relock's chmod land on what the link names (by
// path it did: a file outside every sandbox became --wx-wx-wx). Root reads any directory
// and unlocks none, so this runs as a user (make test-unprivileged).
func TestRelockActsOnTheDirectoryItOpened(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any directory: nothing is unlocked (make test-unprivileged runs this as nobody)")
	}
	workdir := t.TempDir()
	locked := filepath.Join(workdir, "locked")
	if err := os.MkdirAll(filepath.Join(locked, "sub", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(locked, 0o300)
	t.Cleanup(func() { os.Chmod(locked, 0o755); os.Chmod(locked+".moved", 0o755) })
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, nil, 0o644)
	found, unreadable, _, relock := gitEntriesBelow(workdir, true)
	if !slices.Equal(found, []string{filepath.Join(locked, "sub", ".git")}) || len(unreadable) != 0 {
		t.Fatalf("found %v, unreadable %v: the locked directory was not looked into", found, unreadable)
	}
	if err := os.Rename(locked, locked+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, locked); err != nil {
		t.Fatal(err)
	}
	relock()
	if info, _ := os.Stat(victim); info.Mode().Perm() != 0o644 {
		t.Errorf("the relock changed the file the swapped-in link names: %v", info.Mode())
	}
	if info, _ := os.Lstat(locked + ".moved"); info.Mode().Perm() != 0o300 {
		t.Errorf("the directory that was looked into was not locked again: %v", info.Mode())
	}
}

// TestAuditKeepsAnEarlierQuarantine: a .git planted again where an earlier audit's
// quarantine still waits for the user goes to a quarantine of its own; the earlier one
// (and what it holds) was once removed to make room.
func TestAuditKeepsAnEarlierQuarantine(t *testing.T) {
	workdir := t.TempDir()
	gitIn(t, workdir)("init", "-q")
	before := RepositoriesBelow(workdir)
	planted := filepath.Join(workdir, "sub", ".git")
	for round := 1; round <= 2; round++ {
		if err := os.MkdirAll(planted, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(planted, "round"), []byte(strconv.Itoa(round)), 0o644)
		if moved, err := Audit(workdir, []string{filepath.Join(workdir, ".git")}, before); err != nil || len(moved) != 1 {
			t.Fatalf("round %d: moved %v, %v", round, moved, err)
		}
	}
	for name, round := range map[string]string{".git.bwrapkit-quarantine": "1", ".git.bwrapkit-quarantine-2": "2"} {
		if got, _ := os.ReadFile(filepath.Join(workdir, "sub", name, "round")); string(got) != round {
			t.Errorf("%s holds round %q, want %q", name, got, round)
		}
	}
}

// TestAuditMovesOutOfAnUnwritableDirectory: a command that plants a repository and then
// takes the write bit off its parent (chmod 555) does not keep it in place: the parent is
// opened to its owner for the move, through its descriptor, and closed again after.
func TestAuditMovesOutOfAnUnwritableDirectory(t *testing.T) {
	workdir := t.TempDir()
	gitIn(t, workdir)("init", "-q")
	before := RepositoriesBelow(workdir)
	sub := filepath.Join(workdir, "ro")
	if err := os.MkdirAll(filepath.Join(sub, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(sub, 0o555)
	t.Cleanup(func() { os.Chmod(sub, 0o755) })
	moved, err := Audit(workdir, []string{filepath.Join(workdir, ".git")}, before)
	if err != nil || len(moved) != 1 || exists(filepath.Join(sub, ".git")) {
		t.Errorf("a .git in an unwritable directory: moved %v, %v", moved, err)
	}
	if info, err := os.Lstat(sub); err != nil || info.Mode().Perm() != 0o555 {
		t.Errorf("the directory was left writable: %v, %v", info.Mode(), err)
	}
}
