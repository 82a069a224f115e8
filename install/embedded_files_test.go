//go:build embedbwrap

package install

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestEmbeddedFilesAreThePins runs in `make dist` before the release builds: each file
// copied into embedded/ must be the default manifest's pin for its architecture, and this
// build's embedded copy must be the file for its own.
func TestEmbeddedFilesAreThePins(t *testing.T) {
	manifest := Default()
	for _, arch := range []string{"amd64", "arm64"} {
		data, err := os.ReadFile(filepath.Join("embedded", "bwrap-"+arch))
		if err != nil {
			t.Fatal(err)
		}
		artifact, err := manifest.Artifact(arch)
		if err != nil {
			t.Fatal(err)
		}
		digest := sha256.Sum256(data)
		if sum := hex.EncodeToString(digest[:]); sum != artifact.SHA256 || int64(len(data)) != artifact.Size {
			t.Errorf("embedded/bwrap-%s: %d bytes sha256 %s; the pin is %d bytes sha256 %s", arch, len(data), sum, artifact.Size, artifact.SHA256)
		}
		if arch == runtime.GOARCH && string(data) != embeddedBwrap {
			t.Errorf("this build's embedded copy is not embedded/bwrap-%s", arch)
		}
	}
	pin, ok := DescribeEmbedded()
	if !ok || !pin.MatchesPin || pin.Version == "" {
		t.Errorf("DescribeEmbedded() = %+v, %v", pin, ok)
	}
}
