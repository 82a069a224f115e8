// Package install puts a pinned bwrap in bwrapkit's home, or asks the host's package
// manager for one: manifest, download, verification, extraction, atomic placement, locking.
package install

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/bwrapkit/bwrapkit/internal/version"
)

// Schema is the manifest schema this package reads.
const Schema = "bwrapkit.manifest/v1"

// maxPinnedSize bounds the size a manifest may pin: a bwrap is about 1 MB, and the size
// also bounds how much an install writes to disk.
const maxPinnedSize = 256 << 20

// Manifest lists, per architecture, the bwrap binary to install and where to get it.
type Manifest struct {
	Schema    string     `json:"schema"`
	Artifacts []Artifact `json:"artifacts"`
}

// Artifact pins one bwrap binary: the pin is the binary itself, not any archive holding it.
type Artifact struct {
	Version string   `json:"version"`
	Arch    string   `json:"arch"`
	SHA256  string   `json:"sha256"`
	Size    int64    `json:"size"`
	Sources []Source `json:"sources"`
}

// Source is one place the binary can be fetched from.
type Source struct {
	// URL is https, http, file, or an absolute plain path.
	URL string `json:"url"`
	// Member names the file inside an archive; empty means the URL is the binary itself.
	Member string `json:"member"`
}

// ID names the artifact's directory under <home>/versions.
func (a Artifact) ID() string { return a.SHA256[:16] }

// ManifestError says a manifest cannot be used; nothing has been downloaded.
type ManifestError struct{ Err error }

func (e *ManifestError) Error() string { return "manifest: " + e.Err.Error() }
func (e *ManifestError) Unwrap() error { return e.Err }

func manifestErrorf(format string, args ...any) error {
	return &ManifestError{fmt.Errorf(format, args...)}
}

//go:embed default-manifest.json
var defaultManifest []byte

// Default is the manifest built into bwrapkit.
func Default() Manifest {
	manifest, err := ParseManifest(defaultManifest)
	if err != nil {
		panic("embedded default manifest: " + err.Error())
	}
	return manifest
}

// ParseManifest decodes and validates a manifest. Unknown fields are refused: a typo in a
// security pin must not be silently ignored.
func ParseManifest(data []byte) (Manifest, error) {
	var manifest Manifest
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&manifest); err != nil {
		return Manifest{}, manifestErrorf("not a bwrapkit manifest: %w", err)
	}
	if _, err := decoder.Token(); !errors.Is(err, io.EOF) {
		return Manifest{}, manifestErrorf("trailing data after the JSON document")
	}
	if err := manifest.validate(); err != nil {
		return Manifest{}, err
	}
	return manifest, nil
}

// onlyOf reports whether text is non-empty and made of the given bytes alone. (Not a
// regexp: package-level regexps compile at start-up of every bwrapkit command.)
func onlyOf(text, allowed string) bool {
	return text != "" && strings.Trim(text, allowed) == ""
}

const (
	lowerHex      = "0123456789abcdef"
	lowerAlphaNum = "abcdefghijklmnopqrstuvwxyz0123456789"
)

func (m Manifest) validate() error {
	if m.Schema != Schema {
		return manifestErrorf("schema is %q, want %q", m.Schema, Schema)
	}
	if len(m.Artifacts) == 0 {
		return manifestErrorf("no artifacts")
	}
	var arches []string
	for i, artifact := range m.Artifacts {
		if err := artifact.validate(); err != nil {
			return manifestErrorf("artifact %d: %w", i, err)
		}
		if slices.Contains(arches, artifact.Arch) {
			return manifestErrorf("artifact %d: a second artifact for arch %q (which one to install would be ambiguous)", i, artifact.Arch)
		}
		arches = append(arches, artifact.Arch)
	}
	return nil
}

func (a Artifact) validate() error {
	switch {
	case !onlyOf(a.Arch, lowerAlphaNum):
		return fmt.Errorf("arch %q is not a GOARCH name such as amd64", a.Arch)
	case len(a.SHA256) != 64 || !onlyOf(a.SHA256, lowerHex):
		return fmt.Errorf("sha256 %q is not 64 lowercase hex digits", a.SHA256)
	case a.Size <= 0:
		return fmt.Errorf("size %d is not positive", a.Size)
	case a.Size > maxPinnedSize:
		return fmt.Errorf("size %d exceeds %d bytes; a bwrap is about 1 MB", a.Size, maxPinnedSize)
	case len(a.Sources) == 0:
		return errors.New("no sources")
	}
	if _, ok := version.Parse(a.Version); !ok {
		return fmt.Errorf("version %q is not X.Y.Z (three numbers, nothing else)", a.Version)
	}
	for i, source := range a.Sources {
		if err := checkURL(source.URL); err != nil {
			return fmt.Errorf("source %d: %w", i, err)
		}
		if err := checkMember(source.Member); err != nil {
			return fmt.Errorf("source %d: %w", i, err)
		}
	}
	return nil
}

// checkURL accepts https, http (loopback and mirrors), file URLs and absolute plain paths.
// The scheme decision is parseLocation's; this adds what a pinned source must also have.
func checkURL(raw string) error {
	if raw == "" {
		return errors.New("empty url")
	}
	if strings.ContainsRune(raw, 0) {
		return fmt.Errorf("path %q contains NUL", raw)
	}
	where, err := parseLocation(raw)
	if err != nil {
		return err
	}
	if strings.HasPrefix(raw, "/") {
		return nil
	}
	parsed, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("url %q: %w", raw, err)
	}
	switch {
	case parsed.Scheme == "":
		return fmt.Errorf("url %q is neither a URL nor an absolute path", raw)
	case where.remote && parsed.Host == "":
		return fmt.Errorf("url %q has no host", raw)
	case !where.remote && !strings.HasPrefix(where.path, "/"):
		return fmt.Errorf("url %q has no absolute path", raw)
	case parsed.Fragment != "":
		return fmt.Errorf("url %q has a fragment", raw)
	}
	return nil
}

// checkMember refuses member names that could only match an entry outside the archive's
// own tree. Names are never used as paths, but a manifest asking for "../x" is wrong.
func checkMember(member string) error {
	if member == "" {
		return nil
	}
	clean := path.Clean(member)
	switch {
	case strings.ContainsAny(member, "\x00\\"):
		return fmt.Errorf("member %q contains NUL or a backslash", member)
	case strings.HasPrefix(member, "/"):
		return fmt.Errorf("member %q is absolute; archive members are relative", member)
	case clean == "." || clean == ".." || strings.HasPrefix(clean, "../"):
		return fmt.Errorf("member %q leaves the archive's tree", member)
	}
	return nil
}

// Artifact picks the artifact for arch (a GOARCH name).
func (m Manifest) Artifact(arch string) (Artifact, error) {
	var arches []string
	for _, artifact := range m.Artifacts {
		if artifact.Arch == arch {
			return artifact, nil
		}
		arches = append(arches, artifact.Arch)
	}
	return Artifact{}, manifestErrorf("no artifact for arch %s (the manifest has: %s)", arch, strings.Join(arches, ", "))
}
