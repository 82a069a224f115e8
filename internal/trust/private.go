package trust

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// PrivateDir accepts a directory bwrapkit keeps trusted state in (the probe cache, the
// project HOMEs and layers) only when it is a real directory of this user's that no one
// else could replace or write, in a parent no one else could (Replaceable's rule):
// otherwise another user (or a sandbox, through a workdir) could have planted entries.
func PrivateDir(dir string) error {
	entries := make([]Entry, 0, 2)
	for _, path := range []string{dir, filepath.Dir(dir)} {
		entry, err := Lstat(path)
		if err != nil {
			return err
		}
		if !entry.Mode.IsDir() {
			return fmt.Errorf("%s is not a directory", path)
		}
		entries = append(entries, entry)
	}
	if int(entries[0].UID) != os.Geteuid() {
		return fmt.Errorf("%s is not owned by uid %d", dir, os.Geteuid())
	}
	if findings := Replaceable(entries, Current()); len(findings) > 0 {
		return errors.New(strings.Join(findings, "; "))
	}
	return nil
}
