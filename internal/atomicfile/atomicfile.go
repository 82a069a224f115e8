// Package atomicfile writes files so a reader sees the old content or the new, never
// a part: a temp file in the same directory, synced, then renamed over the target.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data, mode perm. On any failure the target is untouched
// and the temp file is removed.
func Write(path string, data []byte, perm os.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	temp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			temp.Close()
			os.Remove(temp.Name())
		}
	}()
	if _, err = temp.Write(data); err != nil {
		return err
	}
	if err = temp.Chmod(perm); err != nil {
		return err
	}
	if err = temp.Sync(); err != nil {
		return err
	}
	if err = temp.Close(); err != nil {
		return err
	}
	if err = os.Rename(temp.Name(), path); err != nil {
		return err
	}
	// The rename is durable only once the directory itself is synced.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
