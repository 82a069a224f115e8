package install

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/internal/safefile"
)

// LocalError is a failure of this host (full disk, read-only or noexec home, permissions),
// not of a source: no other source or method would do better.
type LocalError struct{ Err error }

func (e *LocalError) Error() string { return e.Err.Error() }
func (e *LocalError) Unwrap() error { return e.Err }

// Names inside the home. Temp names start with a dot so no listing mistakes them for an
// install, and carry a fixed prefix so a later installer can sweep those a killed one left.
const (
	versionsDir    = "versions"
	binDir         = "bin"
	tempPrefix     = ".tmp-"
	spoolPrefix    = ".spool-"
	linkTempPrefix = "bwrap.tmp-"
)

// prepareHome creates the home and checks, before anything is downloaded, that a binary
// placed there can be written and run.
func prepareHome(home string) error {
	if !filepath.IsAbs(home) {
		return &LocalError{fmt.Errorf("home %q is not an absolute path", home)}
	}
	for _, dir := range []string{home, filepath.Join(home, versionsDir), filepath.Join(home, binDir)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return &LocalError{fmt.Errorf("cannot create %s: %w (choose another --home)", dir, err)}
		}
	}
	var stat unix.Statfs_t
	if err := unix.Statfs(home, &stat); err != nil {
		return &LocalError{fmt.Errorf("cannot inspect the file system of %s: %w", home, err)}
	}
	switch {
	case stat.Flags&unix.ST_RDONLY != 0:
		return &LocalError{fmt.Errorf("home %s is on a read-only file system (choose another --home)", home)}
	case stat.Flags&unix.ST_NOEXEC != 0:
		return &LocalError{fmt.Errorf("home %s is on a file system mounted noexec, so an installed bwrap could not run (choose another --home)", home)}
	}
	for _, dir := range []string{home, filepath.Join(home, versionsDir), filepath.Join(home, binDir)} {
		if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
			return &LocalError{fmt.Errorf("cannot write to %s: %w (choose another --home, or run as its owner)", dir, err)}
		}
	}
	return nil
}

// sweepStale removes the temp files of installers that died before cleaning up. It runs
// under the home lock, so none of them belongs to a live installer.
func sweepStale(home string) {
	for _, pattern := range []string{
		filepath.Join(home, versionsDir, tempPrefix+"*"),
		filepath.Join(home, spoolPrefix+"*"),
		filepath.Join(home, binDir, linkTempPrefix+"*"),
	} {
		stale, _ := filepath.Glob(pattern)
		for _, name := range stale {
			os.Remove(name)
		}
	}
}

// versionPath is where an artifact's binary lives, and activeLink what bin/bwrap points at
// when that artifact is active (relative, so the home can be moved).
func versionPath(home string, artifact Artifact) string {
	return filepath.Join(home, versionsDir, artifact.ID(), "bwrap")
}

func activeLink(artifact Artifact) string {
	return filepath.Join("..", versionsDir, artifact.ID(), "bwrap")
}

// isActive reports whether bin/bwrap already is this artifact: the link points at its
// version and the file there still has the pinned size and hash.
func isActive(home string, artifact Artifact) bool {
	target, err := os.Readlink(filepath.Join(home, binDir, "bwrap"))
	if err != nil || target != activeLink(artifact) {
		return false
	}
	sum, size, err := hashFile(versionPath(home, artifact))
	return err == nil && size == artifact.Size && sum == artifact.SHA256
}

// hashFile hashes a regular file without following a symlink in its last element and
// without blocking on a FIFO planted there.
func hashFile(name string) (sum string, size int64, err error) {
	file, err := safefile.Open(name)
	if err != nil {
		return "", 0, err
	}
	defer file.Close()
	hasher := sha256.New()
	size, err = io.Copy(hasher, file)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(hasher.Sum(nil)), size, nil
}

// syncDir makes renames and creations inside dir durable.
func syncDir(dir string) error {
	file, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer file.Close()
	// Some file systems cannot sync a directory; the rename is then as durable as they allow.
	if err := file.Sync(); err != nil && !errors.Is(err, unix.EINVAL) {
		return err
	}
	return nil
}
