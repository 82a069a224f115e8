package gitmeta

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkRepositoriesBelow is the commit-mode walk of a project before its run (the
// audit walks it again after): 8,000 directories of 10 files each, 80,000 files, and a
// nested repository every 1,000 directories.
func BenchmarkRepositoriesBelow(b *testing.B) {
	workdir := b.TempDir()
	os.MkdirAll(filepath.Join(workdir, ".git"), 0o755)
	os.WriteFile(filepath.Join(workdir, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	for d := range 8000 {
		dir := filepath.Join(workdir, strconv.Itoa(d/100), strconv.Itoa(d))
		os.MkdirAll(dir, 0o755)
		for f := range 10 {
			os.WriteFile(filepath.Join(dir, strconv.Itoa(f)), nil, 0o644)
		}
		if d%1000 == 0 {
			os.MkdirAll(filepath.Join(dir, ".git", "refs"), 0o755)
		}
	}
	for b.Loop() {
		if len(RepositoriesBelow(workdir)) < 8 {
			b.Fatal("the nested repositories were not found")
		}
	}
}
