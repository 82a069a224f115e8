// Package layerdir removes the directories an overlay mount wrote: an upper layer and
// its work directory, once no mount uses them. overlayfs leaves work/work with mode 0,
// and a sandboxed command can leave directories it may not read back; links are never
// followed.
package layerdir

import (
	"os"
	"path/filepath"
)

// Remove removes dir and everything in it; what stands in the way is made searchable
// and writable by its owner (the caller) first.
func Remove(dir string) error {
	_ = os.Chmod(filepath.Join(dir, "work", "work"), 0o700)
	if os.RemoveAll(dir) == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(path string, entry os.DirEntry, err error) error {
		// A directory the walk could not read (err) or will enter: opened up. WalkDir
		// reports a link as a link, so no link's target is changed.
		if err != nil || entry.IsDir() {
			_ = os.Chmod(path, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
