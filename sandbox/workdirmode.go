package sandbox

import (
	"fmt"

	"github.com/bwrapkit/bwrapkit/internal/kernel"
)

// WorkdirMode is how the command sees the workdir: through an overlay whose writes
// bwrapkit vets and lands afterwards (transactional), or as a live bind (direct).
type WorkdirMode string

const (
	// WorkdirAuto (the zero value) is transactional where this bwrap and kernel can
	// build it, else direct with a warning: the default.
	WorkdirAuto WorkdirMode = ""
	// WorkdirTransactional requires the overlay: a run that cannot have it fails closed.
	WorkdirTransactional WorkdirMode = "transactional"
	// WorkdirDirect binds the workdir live, with .git and --protect paths read-only.
	WorkdirDirect WorkdirMode = "direct"
)

// ParseWorkdirMode reads --workdir-mode (and the policy's workdir_mode).
func ParseWorkdirMode(value string) (WorkdirMode, error) {
	switch WorkdirMode(value) {
	case WorkdirAuto, WorkdirTransactional, WorkdirDirect:
		return WorkdirMode(value), nil
	}
	return "", &PolicyError{"workdir_mode", value, "must be transactional or direct"}
}

// overlayKernel is the first Linux release whose overlayfs mounts inside a user
// namespace (5.11): what an unprivileged bwrap's --overlay needs.
var overlayKernel = [2]int{5, 11}

// ModeChoice is the mode a run gets, and when it is not the one asked for, why.
type ModeChoice struct {
	Mode WorkdirMode
	// Fallback says why the default fell back to direct ("" when it did not).
	Fallback string
}

// chooseWorkdirMode decides the run's mode from what was asked, what the bwrap offers,
// the kernel release and whether a private place for the upper layer exists (noLayer
// says why not). Asking for transactional where it cannot be built is an error that
// names the cause; the default falls back to direct and says why.
func chooseWorkdirMode(asked WorkdirMode, features Features, kernelRelease, noLayer string) (ModeChoice, error) {
	if asked == WorkdirDirect {
		return ModeChoice{Mode: WorkdirDirect}, nil
	}
	cause := ""
	switch {
	case !features.Has("overlay") || !features.Has("overlay-src"):
		cause = "this bwrap has no --overlay (bubblewrap 0.11 or later has it)"
	case !kernel.AtLeast(kernelRelease, overlayKernel[0], overlayKernel[1]):
		cause = fmt.Sprintf("this kernel (%s) cannot mount overlayfs in a user namespace (Linux %d.%d or later can)", kernelRelease, overlayKernel[0], overlayKernel[1])
	case noLayer != "":
		cause = noLayer
	}
	if cause == "" {
		return ModeChoice{Mode: WorkdirTransactional}, nil
	}
	if asked == WorkdirTransactional {
		return ModeChoice{}, &UnavailableError{Reason: ReasonUnsupported, Err: &ModeError{Cause: cause}}
	}
	return ModeChoice{Mode: WorkdirDirect, Fallback: cause}, nil
}

// ModeError is a transactional workdir that was required and cannot be built.
type ModeError struct{ Cause string }

func (e *ModeError) Error() string {
	return "--workdir-mode transactional cannot be built here: " + e.Cause + "; run `bwrapkit install` for a bwrap that has it, or use --workdir-mode direct"
}

// ChooseMode is the mode this policy gets with its probed bwrap on this kernel (see
// chooseWorkdirMode): a caller can say a fallback before the command runs.
func (policy Policy) ChooseMode() (ModeChoice, error) {
	return chooseWorkdirMode(policy.WorkdirMode, policy.Features, kernelRelease(), layerProblem(policy))
}
