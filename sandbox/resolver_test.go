package sandbox

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestResolverAnswersAsEvalSymlinks: the resolver's memo gives, for every path, the answer
// and the error filepath.EvalSymlinks gives, whatever order the paths are asked in (a
// parent resolved first, or a child first): plain directories, files as parents
// (ENOTDIR), relative and absolute symlinks, chains, links to links through "..",
// dangling links, a loop, names that do not exist, the root, and relative paths.
func TestResolverAnswersAsEvalSymlinks(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	at := func(rel string) string { return filepath.Join(root, rel) }
	for _, dir := range []string{"a/b/c", "x/y", "z"} {
		if err := os.MkdirAll(at(dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(at("a/file"), []byte("f"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"a/rel":      "b/c",           // relative, to a directory
		"a/abs":      at("x/y"),       // absolute
		"a/chain":    "rel",           // a link to a link
		"x/up":       "../a/b",        // through ".."
		"x/y/upup":   "../../a/chain", // ".." past a link's target
		"z/tofile":   "../a/file",     // to a file
		"z/dangling": "nowhere",       // to nothing
		"z/loop1":    "loop2",         // a loop
		"z/loop2":    "loop1",
		"z/dirlink":  "/", // to the root
	} {
		if err := os.Symlink(target, at(link)); err != nil {
			t.Fatal(err)
		}
	}
	var paths []string
	for _, rel := range []string{
		"a", "a/b", "a/b/c", "a/file", "a/file/under", "a/rel", "a/rel/more", "a/abs", "a/abs/deeper",
		"a/chain", "a/chain/x", "x/up", "x/up/c", "x/y/upup", "x/y/upup/c", "z/tofile", "z/tofile/x",
		"z/dangling", "z/dangling/x", "z/loop1", "z/loop1/x", "z/dirlink", "z/dirlink/etc", "missing",
		"missing/deeper",
	} {
		paths = append(paths, at(rel))
	}
	// Not cleaned (filepath.Join would): ".." after a link is the link's target's parent.
	for _, rel := range []string{"/a/b/../file", "/a/rel/../file", "/a/abs/../y", "//a//b", "/z/./tofile", "/a/b/c/"} {
		paths = append(paths, root+rel)
	}
	paths = append(paths, "/", root, "relative/path", ".", "")
	for round := range 20 {
		order := append([]string{}, paths...)
		if round > 0 {
			rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		resolve := resolver{}
		for _, path := range order {
			want, wantErr := filepath.EvalSymlinks(path)
			got, gotErr := resolve.evalSymlinks(path)
			if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Errorf("round %d, %q: resolver gave %q, %v; EvalSymlinks %q, %v", round, path, got, gotErr, want, wantErr)
			}
		}
	}
}
