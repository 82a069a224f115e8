package install

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// EmbeddedBwrap returns a copy of the bwrap this build carries (a `make dist` build, tag
// embedbwrap), or nil. The bytes are trusted no more than a download: Install checks them
// against the pin like any source.
func EmbeddedBwrap() []byte {
	if embeddedBwrap == "" {
		return nil
	}
	return []byte(embeddedBwrap)
}

// EmbeddedPin describes the embedded bwrap for `version --json`.
type EmbeddedPin struct {
	Arch    string `json:"arch"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
	Version string `json:"version,omitempty"` // the default manifest's, when it pins these bytes
	// MatchesPin is true when the bytes are the default manifest's pin for Arch; a
	// build whose copy does not match installs from the pinned sources instead.
	MatchesPin bool `json:"matches_pin"`
}

// DescribeEmbedded describes the embedded bwrap, if this build carries one.
func DescribeEmbedded() (EmbeddedPin, bool) {
	if embeddedBwrap == "" {
		return EmbeddedPin{}, false
	}
	sum := sha256.Sum256([]byte(embeddedBwrap))
	pin := EmbeddedPin{Arch: runtime.GOARCH, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(embeddedBwrap))}
	if artifact, err := Default().Artifact(runtime.GOARCH); err == nil && artifact.SHA256 == pin.SHA256 && artifact.Size == pin.Size {
		pin.Version, pin.MatchesPin = artifact.Version, true
	}
	return pin, true
}

// ErrNoEmbedded says --method embedded was asked of a build that carries no bwrap.
var ErrNoEmbedded = errors.New("this bwrapkit build carries no embedded bwrap (use a release build from `make dist`, or --method pinned)")

// EmbeddedMismatchError says the embedded bwrap is not the pinned binary: a corrupted
// build, or a --manifest that pins another one. Nothing was written.
type EmbeddedMismatchError struct {
	GotSHA256, WantSHA256 string
	GotSize, WantSize     int64
}

func (e *EmbeddedMismatchError) Error() string {
	return fmt.Sprintf("the embedded bwrap is %d bytes with sha256 %s, but the pin is %d bytes with sha256 %s",
		e.GotSize, e.GotSHA256, e.WantSize, e.WantSHA256)
}

// checkEmbedded compares the embedded bytes with the pin, before the home is touched.
func checkEmbedded(embedded []byte, artifact Artifact) error {
	digest := sha256.Sum256(embedded)
	sum := hex.EncodeToString(digest[:])
	if int64(len(embedded)) != artifact.Size || sum != artifact.SHA256 {
		return &EmbeddedMismatchError{GotSHA256: sum, GotSize: int64(len(embedded)), WantSHA256: artifact.SHA256, WantSize: artifact.Size}
	}
	return nil
}

func installEmbedded(ctx context.Context, opts Options) (Result, error) {
	if len(opts.Embedded) == 0 {
		return Result{}, ErrNoEmbedded
	}
	if err := opts.Artifact.validate(); err != nil {
		return Result{}, &ManifestError{err}
	}
	if err := checkEmbedded(opts.Embedded, opts.Artifact); err != nil {
		return Result{}, err
	}
	return installVerified(ctx, opts, Embedded, func(context.Context, Options, Artifact) (string, error) {
		opts.Progress.Note("using the bwrap embedded in this build")
		return writeEmbedded(opts.Home, opts.Embedded)
	})
}

// writeEmbedded puts the verified bytes in a temp file in <home>/versions, as a download
// would leave them.
func writeEmbedded(home string, data []byte) (name string, err error) {
	temp, err := createTemp(filepath.Join(home, versionsDir), tempPrefix, "", 0o700)
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			temp.Close()
			os.Remove(temp.Name())
		}
	}()
	if _, err := temp.Write(data); err != nil {
		return "", &LocalError{fmt.Errorf("writing %s: %w", temp.Name(), err)}
	}
	return sealTemp(temp)
}
