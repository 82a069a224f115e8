// Package environ reads and edits environment lists ("NAME=value" entries, as exec and
// os.Environ use them), so every package looks a name up by the same rule.
package environ

import "strings"

// Lookup returns the value of name in env and whether it is set at all. The last entry
// wins, as it does for exec.
func Lookup(env []string, name string) (string, bool) {
	value, found := "", false
	for _, entry := range env {
		if entryName, entryValue, ok := strings.Cut(entry, "="); ok && entryName == name {
			value, found = entryValue, true
		}
	}
	return value, found
}

// Getenv is a getenv over env: "" when name is unset.
func Getenv(env []string) func(string) string {
	return func(name string) string {
		value, _ := Lookup(env, name)
		return value
	}
}

// Name is the NAME of a NAME=value entry (the whole entry when it has no "=").
func Name(entry string) string {
	name, _, _ := strings.Cut(entry, "=")
	return name
}

// Has reports whether env has an entry for name.
func Has(env []string, name string) bool {
	_, found := Lookup(env, name)
	return found
}

// Merge is base with every NAME=value of extra replacing each earlier entry of NAME,
// extra's entries last and in their order.
func Merge(base, extra []string) []string {
	merged := make([]string, 0, len(base)+len(extra))
	for _, entry := range base {
		if !Has(extra, Name(entry)) {
			merged = append(merged, entry)
		}
	}
	return append(merged, extra...)
}
