package install

import (
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
)

// WithMirror returns the artifact with every source moved to mirror: the source's scheme,
// host and path are replaced by the mirror's, keeping the file name. Members stay as they
// are, so a mirror holds the same files under the same names.
func (a Artifact) WithMirror(mirror string) (Artifact, error) {
	if err := checkURL(mirror); err != nil {
		return Artifact{}, fmt.Errorf("--mirror: %w", err)
	}
	if parsed, err := url.Parse(mirror); err == nil && parsed.RawQuery != "" {
		return Artifact{}, fmt.Errorf("--mirror %q: a query string cannot be combined with file names", mirror)
	}
	mirrored := a
	mirrored.Sources = nil
	for _, source := range a.Sources {
		name, err := fileName(source.URL)
		if err != nil {
			return Artifact{}, err
		}
		if strings.HasPrefix(mirror, "/") {
			// A plain path takes the name as it is on disk, not URL-escaped.
			if unescaped, err := url.PathUnescape(name); err == nil {
				name = unescaped
			}
		}
		moved := Source{URL: strings.TrimRight(mirror, "/") + "/" + name, Member: source.Member}
		if !slices.Contains(mirrored.Sources, moved) {
			mirrored.Sources = append(mirrored.Sources, moved)
		}
	}
	return mirrored, nil
}

// fileName is the last path element of a source URL or plain path, still escaped as it
// was in a URL so it can be appended to another URL unchanged.
func fileName(raw string) (string, error) {
	escapedPath := raw
	if !strings.HasPrefix(raw, "/") {
		parsed, err := url.Parse(raw)
		if err != nil {
			return "", fmt.Errorf("source %q: %w", raw, err)
		}
		escapedPath = parsed.EscapedPath()
	}
	name := path.Base(escapedPath)
	if name == "/" || name == "." || name == "" {
		return "", fmt.Errorf("source %q has no file name to look up on a mirror", raw)
	}
	return name, nil
}
