package install

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

const goodSHA = "253c70372599ac19851ffcc923acca01fe1bcf6b4b03fce789fd9fb3e2ff6270"

func manifestJSON(artifact string) string {
	return `{"schema":"bwrapkit.manifest/v1","artifacts":[` + artifact + `]}`
}

func artifactJSON(replace ...string) string {
	fields := map[string]string{
		"version": `"0.12.0"`, "arch": `"amd64"`, "sha256": `"` + goodSHA + `"`, "size": `945328`,
		"sources": `[{"url":"https://example.org/bwrap.tar.gz","member":"bwrap"}]`,
	}
	for i := 0; i+1 < len(replace); i += 2 {
		fields[replace[i]] = replace[i+1]
	}
	var parts []string
	for _, key := range []string{"version", "arch", "sha256", "size", "sources"} {
		if value := fields[key]; value != "" {
			parts = append(parts, `"`+key+`":`+value)
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func sourcesJSON(url, member string) string {
	return `[{"url":"` + url + `","member":"` + member + `"}]`
}

func TestParseManifest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		json    string
		wantErr string // empty: valid
	}{
		{"valid", manifestJSON(artifactJSON()), ""},
		{"two arches", manifestJSON(artifactJSON() + "," + artifactJSON("arch", `"arm64"`)), ""},
		{"raw source", manifestJSON(artifactJSON("sources", sourcesJSON("file:///srv/mirror/bwrap", ""))), ""},
		{"plain path", manifestJSON(artifactJSON("sources", sourcesJSON("/srv/mirror/bwrap.tar.xz", "bin/bwrap"))), ""},
		{"http loopback", manifestJSON(artifactJSON("sources", sourcesJSON("http://127.0.0.1:8080/bwrap", ""))), ""},
		{"dot member", manifestJSON(artifactJSON("sources", sourcesJSON("/m/b.tar", "./bwrap"))), ""},
		{"not json", "bwrap 0.12.0", "not a bwrapkit manifest"},
		{"trailing data", manifestJSON(artifactJSON()) + "{}", "trailing data"},
		{"unknown field", `{"schema":"bwrapkit.manifest/v1","artifacts":[],"extra":1}`, "unknown field"},
		{"wrong schema", `{"schema":"bwrapkit.manifest/v2","artifacts":[` + artifactJSON() + `]}`, `schema is "bwrapkit.manifest/v2"`},
		{"no schema", `{"artifacts":[` + artifactJSON() + `]}`, `schema is ""`},
		{"no artifacts", manifestJSON(""), "no artifacts"},
		{"duplicate arch", manifestJSON(artifactJSON() + "," + artifactJSON()), "second artifact for arch"},
		{"uppercase sha", manifestJSON(artifactJSON("sha256", `"`+strings.ToUpper(goodSHA)+`"`)), "64 lowercase hex"},
		{"short sha", manifestJSON(artifactJSON("sha256", `"`+goodSHA[:63]+`"`)), "64 lowercase hex"},
		{"non-hex sha", manifestJSON(artifactJSON("sha256", `"`+goodSHA[:63]+`g"`)), "64 lowercase hex"},
		{"zero size", manifestJSON(artifactJSON("size", "0")), "not positive"},
		{"negative size", manifestJSON(artifactJSON("size", "-1")), "not positive"},
		{"huge size", manifestJSON(artifactJSON("size", "1073741824")), "exceeds"},
		{"no version", manifestJSON(artifactJSON("version", `""`)), "not X.Y.Z"},
		{"custom version", manifestJSON(artifactJSON("version", `"built for Codex"`)), "not X.Y.Z"},
		{"bad arch", manifestJSON(artifactJSON("arch", `"x86_64 "`)), "not a GOARCH name"},
		{"no sources", manifestJSON(artifactJSON("sources", `[]`)), "no sources"},
		{"ftp", manifestJSON(artifactJSON("sources", sourcesJSON("ftp://example.org/bwrap", ""))), `scheme "ftp"`},
		{"relative path", manifestJSON(artifactJSON("sources", sourcesJSON("mirror/bwrap", ""))), "neither a URL nor an absolute path"},
		{"https without host", manifestJSON(artifactJSON("sources", sourcesJSON("https:///bwrap", ""))), "no host"},
		{"remote file URL", manifestJSON(artifactJSON("sources", sourcesJSON("file://server/bwrap", ""))), "remote host"},
		{"empty url", manifestJSON(artifactJSON("sources", sourcesJSON("", ""))), "empty url"},
		{"member escapes", manifestJSON(artifactJSON("sources", sourcesJSON("/m/b.tar", "../bwrap"))), "leaves the archive"},
		{"member escapes after clean", manifestJSON(artifactJSON("sources", sourcesJSON("/m/b.tar", "a/../../bwrap"))), "leaves the archive"},
		{"absolute member", manifestJSON(artifactJSON("sources", sourcesJSON("/m/b.tar", "/usr/bin/bwrap"))), "is absolute"},
		{"dot member alone", manifestJSON(artifactJSON("sources", sourcesJSON("/m/b.tar", "."))), "leaves the archive"},
		{"backslash member", manifestJSON(artifactJSON("sources", sourcesJSON("/m/b.zip", `..\\bwrap`))), "backslash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseManifest([]byte(tc.json))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseManifest: %v", err)
				}
				return
			}
			var manifestErr *ManifestError
			if !errors.As(err, &manifestErr) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ParseManifest error = %v, want a *ManifestError containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestManifestArtifact(t *testing.T) {
	manifest, err := ParseManifest([]byte(manifestJSON(artifactJSON() + "," + artifactJSON("arch", `"arm64"`, "version", `"0.11.2"`))))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		arch, wantVersion, wantErr string
	}{
		{"amd64", "0.12.0", ""},
		{"arm64", "0.11.2", ""},
		{"riscv64", "", "no artifact for arch riscv64 (the manifest has: amd64, arm64)"},
	} {
		artifact, err := manifest.Artifact(tc.arch)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Artifact(%s) error = %v, want %q", tc.arch, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || artifact.Version != tc.wantVersion):
			t.Errorf("Artifact(%s) = %+v, %v; want version %s", tc.arch, artifact, err, tc.wantVersion)
		}
	}
}

func TestDefaultManifest(t *testing.T) {
	manifest := Default()
	artifact, err := manifest.Artifact("amd64")
	if err != nil {
		t.Fatal(err)
	}
	want := Artifact{
		Version: "0.12.0", Arch: "amd64", SHA256: goodSHA, Size: 945328,
		Sources: []Source{{URL: "https://github.com/bwrapkit/bwrapkit/releases/download/bwrap-0.12.0/bwrap-0.12.0-linux-amd64.tar.gz", Member: "bwrap"}},
	}
	if mustJSON(t, artifact) != mustJSON(t, want) {
		t.Errorf("default amd64 artifact = %s\nwant %s", mustJSON(t, artifact), mustJSON(t, want))
	}
	if artifact.ID() != "253c70372599ac19" {
		t.Errorf("ID() = %s", artifact.ID())
	}
	arm64, err := manifest.Artifact("arm64")
	if err != nil || arm64.Version != "0.12.0" || arm64.Size != 731544 || !strings.HasSuffix(arm64.Sources[0].URL, "/bwrap-0.12.0-linux-arm64.tar.gz") {
		t.Errorf("default arm64 artifact = %+v, %v", arm64, err)
	}
	if _, err := manifest.Artifact("riscv64"); err == nil {
		t.Error("the default manifest has no riscv64 artifact, yet Artifact(riscv64) succeeded")
	}
}

// TestDefaultManifestPinsTheReproducibleBuilds proves the embedded pins: the binaries that
// scripts/get-test-bwraps.sh rebuilds from the pinned source (arm64 cross-built, so it
// cannot be installed and run here) and their release archives must be exactly what the
// manifest names.
func TestDefaultManifestPinsTheReproducibleBuilds(t *testing.T) {
	for arch, built := range map[string]string{"amd64": "bwrap-0.12.0", "arm64": "bwrap-0.12.0-arm64"} {
		artifact, err := Default().Artifact(arch)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(livetest.CachedBwraps(), built))
		if err != nil {
			livetest.Skip(t, "the static builds are not there (scripts/get-test-bwraps.sh): "+err.Error())
			return
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != artifact.SHA256 || int64(len(data)) != artifact.Size {
			t.Errorf("%s: the rebuilt binary is sha256 %x, %d bytes; the embedded pin says %s, %d bytes", arch, sum, len(data), artifact.SHA256, artifact.Size)
		}
		// The release archive (what the source URL serves) streams through the installer's
		// own download and verification to exactly the pinned member. (Not installed: an
		// arm64 binary cannot pass the run check on this machine.)
		mirrored, err := artifact.WithMirror(livetest.CachedBwraps())
		if err != nil {
			t.Fatal(err)
		}
		home := t.TempDir()
		os.MkdirAll(filepath.Join(home, versionsDir), 0o755)
		verified, err := fetchPinned(context.Background(), testOptions(home, mirrored).withDefaults(), mirrored)
		if err != nil {
			t.Errorf("%s: the release archive does not yield the pin: %v", arch, err)
			continue
		}
		if got, _ := os.ReadFile(verified); !bytes.Equal(got, data) {
			t.Errorf("%s: extracted member differs from the rebuilt binary", arch)
		}
	}
}

func TestParseMethod(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Method
		ok   bool
	}{{"auto", Auto, true}, {"pinned", Pinned, true}, {"package", Package, true}, {"", "", false}, {"apt", "", false}, {"Pinned", "", false}} {
		got, err := ParseMethod(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseMethod(%q) = %q, %v", tc.in, got, err)
		}
	}
}
