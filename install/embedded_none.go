//go:build !embedbwrap

package install

// embeddedBwrap is empty in an ordinary build (`go install`, `go test`): install then
// behaves as if the embedded method did not exist, and auto starts with the pinned sources.
const embeddedBwrap = ""
