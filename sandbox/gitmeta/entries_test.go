package gitmeta

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestIndexGitlinksOfRealIndexes: gitlinks read from indexes real git wrote, in every
// format version it writes.
func TestIndexGitlinksOfRealIndexes(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	for _, version := range []string{"2", "3", "4"} {
		t.Run("v"+version, func(t *testing.T) {
			repo := t.TempDir()
			git := func(args ...string) {
				cmd := exec.Command(gitPath, append([]string{"-C", repo}, args...)...)
				cmd.Env = []string{"HOME=" + repo, "GIT_CONFIG_NOSYSTEM=1"}
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
			git("init", "-q")
			os.WriteFile(filepath.Join(repo, "file"), []byte("x"), 0o644)
			git("add", "file")
			for _, sub := range []string{"libs/a", "libs/ab", "vendor/deep/module"} {
				git("update-index", "--add", "--cacheinfo", "160000,1111111111111111111111111111111111111111,"+sub)
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
		})
	}
}

func TestParseIndexGitlinksRefusesDamage(t *testing.T) {
	for _, data := range [][]byte{nil, []byte("DIRC"), []byte("DIRC\x00\x00\x00\x09\x00\x00\x00\x00"), []byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x05")} {
		if _, err := parseIndexGitlinks(data); err == nil {
			t.Errorf("%q parsed", data)
		}
	}
}

// FuzzParseIndexGitlinks: no index, however damaged, makes the parser panic or hang.
func FuzzParseIndexGitlinks(f *testing.F) {
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, data []byte) { parseIndexGitlinks(data) })
}
