package install

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// createTemp makes a new file that no other process can have opened: O_EXCL with a random
// name. Mode 0700 keeps it unreadable to others until it is verified.
func createTemp(dir, prefix, suffix string, perm os.FileMode) (*os.File, error) {
	for range 10 {
		name := filepath.Join(dir, prefix+randomSuffix()+suffix)
		file, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, &LocalError{fmt.Errorf("creating a temp file in %s: %w", dir, err)}
		}
		return file, nil
	}
	return nil, &LocalError{fmt.Errorf("creating a temp file in %s: ten random names were taken", dir)}
}

func randomSuffix() string {
	var random [8]byte
	rand.Read(random[:])
	return hex.EncodeToString(random[:])
}

// placeVersion moves a verified binary to <home>/versions/<id>/bwrap. It returns an undo
// that removes what it created, for a failure after this step.
func placeVersion(home string, artifact Artifact, verified string) (undo func(), err error) {
	versions := filepath.Join(home, versionsDir)
	dir := filepath.Join(versions, artifact.ID())
	created := false
	switch err := os.Mkdir(dir, 0o755); {
	case err == nil:
		created = true
	case !errors.Is(err, os.ErrExist):
		return nil, &LocalError{fmt.Errorf("creating %s: %w", dir, err)}
	default:
		// Renaming into a symlink named like the version would place the binary wherever
		// the link points.
		if info, err := os.Lstat(dir); err != nil || !info.IsDir() {
			return nil, &LocalError{fmt.Errorf("%s is not a directory (remove it and install again)", dir)}
		}
	}
	undo = func() {
		if created {
			os.RemoveAll(dir)
		}
	}
	// An existing file here has the same name, so the same hash prefix: replacing it with
	// the verified bytes repairs a tampered copy and is harmless otherwise.
	if err := os.Rename(verified, filepath.Join(dir, "bwrap")); err != nil {
		undo()
		return nil, &LocalError{fmt.Errorf("placing %s: %w", dir, err)}
	}
	if err := errors.Join(syncDir(dir), syncDir(versions)); err != nil {
		undo()
		return nil, &LocalError{fmt.Errorf("syncing %s: %w", dir, err)}
	}
	return undo, nil
}

// activate points <home>/bin/bwrap at the artifact in one rename, so a concurrent reader
// sees the old binary or the new one, never a missing or partial file.
func activate(home string, artifact Artifact) error {
	bin := filepath.Join(home, binDir)
	temp := filepath.Join(bin, linkTempPrefix+randomSuffix())
	if err := os.Symlink(activeLink(artifact), temp); err != nil {
		return &LocalError{fmt.Errorf("creating %s: %w", temp, err)}
	}
	if err := os.Rename(temp, filepath.Join(bin, "bwrap")); err != nil {
		os.Remove(temp)
		return &LocalError{fmt.Errorf("replacing %s: %w", filepath.Join(bin, "bwrap"), err)}
	}
	// The swap has happened; a failed directory sync cannot undo it and must not make the
	// caller remove the version bin/bwrap now points at.
	syncDir(bin)
	return nil
}
