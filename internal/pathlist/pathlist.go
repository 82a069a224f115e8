// Package pathlist walks a PATH-style list the one way bwrapkit trusts: only absolute
// directories, in order; empty and relative entries are skipped and said why.
package pathlist

import (
	"os"
	"path/filepath"
)

// Entry is one element of a PATH list. Skipped is non-empty when the entry is not searched.
type Entry struct {
	Dir     string
	Skipped string
}

// Reasons an entry is not searched: both would make the result depend on the current
// directory, which a command can choose.
const (
	SkippedEmpty    = "empty PATH entry ignored (it would mean the current directory)"
	SkippedRelative = "relative PATH entry ignored (it depends on the current directory)"
)

// Entries splits list into its entries, each marked searched or skipped.
func Entries(list string) []Entry {
	var entries []Entry
	for _, dir := range filepath.SplitList(list) {
		entry := Entry{Dir: dir}
		switch {
		case dir == "":
			entry.Skipped = SkippedEmpty
		case !filepath.IsAbs(dir):
			entry.Skipped = SkippedRelative
		}
		entries = append(entries, entry)
	}
	return entries
}

// Look returns the first dir/name in list that isExecutable accepts.
func Look(list, name string, isExecutable func(path string) bool) (string, bool) {
	for _, entry := range Entries(list) {
		if entry.Skipped != "" {
			continue
		}
		if candidate := filepath.Join(entry.Dir, name); isExecutable(candidate) {
			return candidate, true
		}
	}
	return "", false
}

// IsExecutable is the real check: a regular file with an execute bit, symlinks followed
// (as exec follows them).
func IsExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0
}
