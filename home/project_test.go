package home

import (
	"os"
	"path/filepath"
	"testing"
)

// TestProjectHomeMakesNoMissingPlace: a TMPDIR or XDG_CACHE_HOME under a directory that
// does not exist (HOME=/nonexistent, a service account) is passed over, never created.
func TestProjectHomeMakesNoMissingPlace(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nonexistent")
	if err := MakeDirs(filepath.Join(missing, "tmp", "bwrapkit", homesDirName), filepath.Join(missing, "tmp", "bwrapkit", homesDirName, "p-0")); err == nil {
		t.Errorf("a home was made under a missing directory")
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("%s was created", missing)
	}
	cache := filepath.Join(t.TempDir(), "cache") // the base itself may be made
	if err := MakeDirs(filepath.Join(cache, "bwrapkit", homesDirName), filepath.Join(cache, "bwrapkit", homesDirName, "p-0")); err != nil {
		t.Errorf("a cache base in an existing directory: %v", err)
	}
}

func TestPrivilegeSuffixTellsPrivilegesApart(t *testing.T) {
	if privilegeSuffix("") != "" || privilegeSuffix("net") == privilegeSuffix("net\x00pass-env=TOKEN") {
		t.Error("privilege suffixes do not tell the privileges apart")
	}
}
