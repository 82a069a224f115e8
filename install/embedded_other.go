//go:build embedbwrap && !amd64 && !arm64

package install

// embeddedBwrap: no static bwrap is pinned for this architecture.
const embeddedBwrap = ""
