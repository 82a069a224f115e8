// Package atomicfile writes files so a reader sees the old content or the new, never
// a part: a temp file in the same directory, synced, then renamed over the target.
package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path with data, mode perm. On any failure the target is untouched
// and the temp file is removed.
//
// Only a regular file (or a path that does not exist yet) is replaced. A symlink is
// followed, so the link stays and its target is replaced. A device, pipe or socket
// (`--output /dev/null`, `/dev/stdout`) is written in place: renaming over it would
// destroy it (as root, /dev/null itself) and atomicity means nothing for a stream.
func Write(path string, data []byte, perm os.FileMode) error {
	target, err := filepath.EvalSymlinks(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if info, lerr := os.Lstat(path); lerr == nil && info.Mode()&fs.ModeSymlink != 0 {
			// A dangling link, or /proc/self/fd/N naming a pipe: write through it.
			return writeInPlace(path, data)
		}
		target = path
	case err != nil:
		return err
	}
	if info, err := os.Stat(target); err == nil && !info.Mode().IsRegular() {
		if info.IsDir() {
			return &fs.PathError{Op: "write", Path: path, Err: errors.New("is a directory")}
		}
		return writeInPlace(target, data)
	}
	return replace(target, data, perm)
}

// writeInPlace writes to something that is not a regular file, as a shell's > would.
func writeInPlace(path string, data []byte) error {
	file, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := file.Write(data); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

// replace is the atomic write of a regular file.
func replace(path string, data []byte, perm os.FileMode) (err error) {
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
