package gitmeta

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestIndexGitlinksOfRealIndexes: gitlinks read from indexes real git wrote, in every
// format version it writes.
func TestIndexGitlinksOfRealIndexes(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	for _, c := range []struct{ version, format string }{{"2", "sha1"}, {"3", "sha1"}, {"4", "sha1"}, {"2", "sha256"}, {"3", "sha256"}, {"4", "sha256"}} {
		version := c.version
		t.Run("v"+version+"-"+c.format, func(t *testing.T) {
			repo := t.TempDir()
			git := func(args ...string) {
				cmd := exec.Command(gitPath, append([]string{"-C", repo}, args...)...)
				cmd.Env = []string{"HOME=" + repo, "GIT_CONFIG_NOSYSTEM=1"}
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
			git("init", "-q", "--object-format="+c.format)
			os.WriteFile(filepath.Join(repo, "file"), []byte("x"), 0o644)
			git("add", "file")
			id := strings.Repeat("1", 40)
			if c.format == "sha256" {
				id = strings.Repeat("1", 64)
			}
			for _, sub := range []string{"libs/a", "libs/ab", "vendor/deep/module"} {
				git("update-index", "--add", "--cacheinfo", "160000,"+id+","+sub)
			}
			if version == "3" {
				git("update-index", "--index-version", "3", "--skip-worktree", "file")
			} else {
				git("update-index", "--index-version", version)
			}
			got, err := indexGitlinks(filepath.Join(repo, ".git", "index"))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, []string{"libs/a", "libs/ab", "vendor/deep/module"}) {
				t.Errorf("gitlinks %v", got)
			}
			data, _ := os.ReadFile(filepath.Join(repo, ".git", "index"))
			if extensions, err := indexExtensions(data, objectHashSize(filepath.Join(repo, ".git"))); err != nil {
				t.Errorf("extensions %v: %v", extensions, err)
			}
		})
	}
}

func TestParseIndexRefusesDamage(t *testing.T) {
	for _, data := range [][]byte{nil, []byte("DIRC"), []byte("DIRC\x00\x00\x00\x09\x00\x00\x00\x00"), []byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x05")} {
		if err := scanIndexData(data, 20, noShared, ignore); err == nil {
			t.Errorf("%q parsed", data)
		}
	}
}

// FuzzParseIndex: no index, however damaged, and no shared index beside a split one,
// makes the parser panic or hang.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x01"), []byte(nil))
	f.Fuzz(func(t *testing.T, data, shared []byte) {
		withShared := func(_ string, fn func([]byte) error) error { return fn(shared) }
		scanIndexData(data, 20, withShared, ignore)
		scanIndexData(data, 32, withShared, ignore)
	})
}

// noShared is withShared for an index with no shared part beside it.
func noShared(string, func([]byte) error) error { return os.ErrNotExist }

// ignore is a visit that keeps nothing.
func ignore([]byte, uint32) {}
