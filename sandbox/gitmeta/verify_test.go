package gitmeta

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/sandbox/land"
)

// TestNewlyHiddenIndexEntries: the reviewer's `git update-index --assume-unchanged
// src/a.go` in a commit-mode run hid its own change from the host's git status; an index
// that newly hides a path is refused, one that keeps the host's own marks is not.
func TestNewlyHiddenIndexEntries(t *testing.T) {
	before := hiddenPaths("H README.md\x00S sparse/x.go\x00H src/a.go\x00")
	after := hiddenPaths("H README.md\x00S sparse/x.go\x00h src/a.go\x00S src/b.go\x00")
	if got, want := newlyHidden(before, after), []string{"src/a.go", "src/b.go"}; !slices.Equal(got, want) {
		t.Errorf("newly hidden %v, want %v", got, want)
	}
	if got := newlyHidden(after, after); len(got) != 0 {
		t.Errorf("the host's own marks counted as new: %v", got)
	}
}

// testRepo is a repository with one commit of one file, made by the host's git; git
// runs git in it (GIT_INDEX_FILE and the like in env), failing the test on an error.
func testRepo(t *testing.T) (gitDir string, git func(env []string, args ...string) string) {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	repo := t.TempDir()
	git = func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(gitPath, append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-C", repo}, args...)...)
		cmd.Env = append([]string{"HOME=" + repo, "GIT_CONFIG_NOSYSTEM=1"}, env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git(nil, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "file"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(nil, "add", "file")
	git(nil, "commit", "-qm", "first")
	return filepath.Join(repo, ".git"), git
}

// commandIndex is a copy of the repository's index, as a command's layer would hold it,
// changed by git with change (args to git, run with GIT_INDEX_FILE set to the copy).
func commandIndex(t *testing.T, gitDir string, git func([]string, ...string) string, change ...[]string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(gitDir, "index"))
	if err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(t.TempDir(), "index")
	if err := os.WriteFile(index, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range change {
		git([]string{"GIT_INDEX_FILE=" + index}, args...)
	}
	return index
}

// TestIndexOKRules: a command's index lands only as the host's git reads it with the
// gitlinks of HEAD, nothing newly hidden, and not split; each refusal beside a control
// that lands.
func TestIndexOKRules(t *testing.T) {
	gitDir, git := testRepo(t)
	if !indexOK(gitDir, commandIndex(t, gitDir, git), noRefusal) {
		t.Fatal("the host's own index, unchanged, refused: every refusal below would prove nothing")
	}
	gitlink := commandIndex(t, gitDir, git, []string{"update-index", "--add", "--cacheinfo", "160000,1111111111111111111111111111111111111111,sub"})
	if indexOK(gitDir, gitlink, noRefusal) {
		t.Error("an index with a gitlink HEAD lacks landed")
	}
	hidden := commandIndex(t, gitDir, git, []string{"update-index", "--skip-worktree", "file"})
	if indexOK(gitDir, hidden, noRefusal) {
		t.Error("an index that newly hides a file from git status landed")
	}
	// A split index whose shared part the host's git finds (the host splits its own
	// index): git reads it, the same entries, yet its entries live in a file apart.
	git(nil, "-c", "core.splitIndex=true", "update-index", "--split-index")
	split := commandIndex(t, gitDir, git)
	if data, _ := os.ReadFile(split); !bytes.Contains(data, []byte("link")) {
		t.Fatal("precondition: git wrote no split index")
	}
	if indexOK(gitDir, split, noRefusal) {
		t.Error("a split index landed")
	}
}

// TestObjectAndHeadRules: a loose object lands only when its content hashes to its
// name, a pack only as git verifies it, HEAD only as a symbolic ref to a branch.
func TestObjectAndHeadRules(t *testing.T) {
	dir := t.TempDir()
	object := func(content string) string {
		var packed bytes.Buffer
		w := zlib.NewWriter(&packed)
		w.Write([]byte(content))
		w.Close()
		path := filepath.Join(dir, fmt.Sprintf("object%d", len(content)))
		if err := os.WriteFile(path, packed.Bytes(), 0o444); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const blob = "blob 2\x00x\n"
	name := fmt.Sprintf("%x", sha1.Sum([]byte(blob)))
	if !looseObjectOK(object(blob), name) {
		t.Fatal("a loose object whose content matches its name refused")
	}
	if looseObjectOK(object("blob 3\x00xy\n"), name) {
		t.Error("a loose object whose content is not its name landed")
	}
	pack := filepath.Join(dir, "pack-0123")
	for _, ext := range []string{".pack", ".idx"} {
		if err := os.WriteFile(pack+ext, []byte("not a pack"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	if packOK(pack + ".pack") {
		t.Error("a pack git does not verify landed")
	}
	for content, want := range map[string]bool{
		"ref: refs/heads/main\n": true, "ref: refs/tags/v1\n": false, "ref: refs/heads/../../config\n": false,
		name + "\n": false, "ref: refs/heads/a.lock\n": false,
	} {
		head := filepath.Join(dir, "HEAD")
		if err := os.WriteFile(head, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := headOK(head); got != want {
			t.Errorf("HEAD %q: landed %v, want %v", content, got, want)
		}
	}
}

// TestIndexKeepsRefusedPaths: a command's index lands only when it stages no path the work
// tree refuses, against the host's own index; staging an ordinary file lands.
func TestIndexKeepsRefusedPaths(t *testing.T) {
	gitDir, git := testRepo(t)
	refuses := func(path string) bool { return path == ".npmrc" }
	blob := "0000000000000000000000000000000000000001"
	if !indexOK(gitDir, commandIndex(t, gitDir, git), refuses) {
		t.Fatal("the host's own index, unchanged, refused")
	}
	if !indexOK(gitDir, commandIndex(t, gitDir, git, []string{"update-index", "--add", "--cacheinfo", "100644," + blob + ",notes.txt"}), refuses) {
		t.Error("an index staging an ordinary file refused")
	}
	staged := commandIndex(t, gitDir, git, []string{"update-index", "--add", "--cacheinfo", "100644," + blob + ",.npmrc"})
	if indexOK(gitDir, staged, refuses) {
		t.Error("an index staging a refused path landed")
	}
	// And as Verify judges the layer's index.
	upper := t.TempDir()
	os.Mkdir(filepath.Join(upper, ".git"), 0o755)
	data, _ := os.ReadFile(staged)
	os.WriteFile(filepath.Join(upper, ".git", "index"), data, 0o644)
	entries := []land.Entry{{Path: ".git/index", Kind: land.KindFile}}
	Verify(filepath.Dir(gitDir), upper, entries, refuses)
	if entries[0].GitOK {
		t.Error("Verify passed an index staging a refused path")
	}
}

// noRefusal refuses no path: the checks other than the refused paths'.
func noRefusal(string) bool { return false }
