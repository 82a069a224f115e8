//go:build embedbwrap

package install

import _ "embed"

// embeddedBwrap is the pinned static bwrap for amd64, copied to embedded/ by `make dist`
// from scripts/get-test-bwraps.sh's verified build (never committed). A string, so the
// bytes stay in read-only data and cost nothing until install reads them.
//
//go:embed embedded/bwrap-amd64
var embeddedBwrap string
