package sandbox

import (
	"crypto/sha256"
	"errors"
	"fmt"
)

// A Policy is only as good as the resolution that built it: NewPolicy resolves every
// path, refuses what is unsafe, protects .git and scans the host's /proc surface. A
// Policy written by hand, or one of NewPolicy's changed afterwards, skips all of that, so
// NewPolicy seals what it returns and Run refuses any policy whose seal does not match.
//
// The seal is a digest of the policy's Go syntax (%#v: every field, exported or not, of
// every nested value, maps in sorted order), so a field added to Policy is covered the
// day it is added, with nothing to update here. Features are left out: they describe the
// bwrap binary, not the policy, and Run probes the binary itself (see Run).
// TestSealCoversEveryField keeps Policy to kinds whose %#v shows their content (no
// pointers, interfaces or funcs, whose %#v is an address).

// errUnsealed is Run's refusal of a policy that NewPolicy did not return as it is.
var errUnsealed = errors.New("the policy did not come from NewPolicy, or was changed after it: build it with NewPolicy, and change nothing in it but Features")

// sealed returns policy with its seal set over its current content.
func (policy Policy) sealed() Policy {
	policy.seal = policy.fingerprint()
	return policy
}

// hasValidSeal reports whether policy is, field for field, what NewPolicy returned.
func (policy Policy) hasValidSeal() bool {
	return policy.seal != "" && policy.seal == policy.fingerprint()
}

func (policy Policy) fingerprint() string {
	policy.seal, policy.Features = "", Features{}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%#v", policy)))
	return string(sum[:])
}
