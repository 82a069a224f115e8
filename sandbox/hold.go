package sandbox

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwrapkit/bwrapkit/sandbox/cgroup"
	"github.com/bwrapkit/bwrapkit/sandbox/lifetime"
	"github.com/bwrapkit/bwrapkit/sandbox/limits"
)

// Hold is what holds one run besides bwrap: its keeper (Options.Keeper) and its cgroup
// (docs/lifetime.md). Both exist before bwrap does. Making them is a program start and a
// few cgroupfs reads and writes, most of it the kernel's work: Run makes them itself, but
// a caller with work of its own left before Run (the CLI: its home, caches and proxy) can
// have them made meanwhile, on another CPU, with Prepare, and pass the Hold in
// Options.Hold.
type Hold struct {
	keeper string
	limits limits.Limits
	made   time.Time
	ready  chan struct{} // closed once the fields below are set
	kept   *lifetime.Keeper
	group  *cgroup.Group
	host   *runCgroup
	err    error
	taken  atomic.Bool
	once   sync.Once
}

// holdFresh is how long a Hold waits for its run: well within the minute after which
// another run sweeps a cgroup that holds no process as abandoned (package cgroup).
const holdFresh = 10 * time.Second

// Prepare starts making a run's keeper (keeper names the executable, as Options.Keeper
// does; "" for none) and its cgroup for the bounds l (the policy's Limits), and returns
// at once. Like Run, it first sets close-on-exec on every descriptor of the process above
// 2, so the keeper inherits none of the caller's. Pass the Hold to the Run it is for,
// within seconds: Run takes it over if it was made for that run's keeper and bounds and
// is fresh, and makes its own otherwise. Release it in any case (a no-op once taken).
func Prepare(keeper string, l limits.Limits) *Hold { return prepare(keeper, l, true) }

// prepare is Prepare; seal false for Run's own hold, whose descriptors Run sealed already.
func prepare(keeper string, l limits.Limits, seal bool) *Hold {
	h := &Hold{keeper: keeper, limits: l, made: time.Now(), ready: make(chan struct{})}
	go func() {
		defer close(h.ready)
		if seal {
			if h.err = keepInheritedFDsOut(); h.err != nil {
				return
			}
		}
		// The keeper starts when the cgroup is about to be made (announce; after the host
		// is known, and bwrapkit has moved into its leaf if it must), or after, where the
		// host gives none; it is told of the cgroup before the cgroup exists.
		keep := sync.OnceValues(func() (*lifetime.Keeper, error) {
			if keeper == "" {
				return nil, nil
			}
			return lifetime.Start(keeper)
		})
		group, host, cgroupErr := startCgroup(l, keep)
		h.kept, h.err = keep()
		if h.err == nil {
			h.err = cgroupErr
		}
		h.group, h.host = group, host
	}()
	return h
}

// take hands the hold to the run of keeper and bounds l: false when it was made for
// another run's, is stale, or was taken or released already.
func (h *Hold) take(keeper string, l limits.Limits) bool {
	return h != nil && h.ready != nil && h.keeper == keeper && h.limits == l &&
		time.Since(h.made) < holdFresh && h.taken.CompareAndSwap(false, true)
}

// stale says whether the hold is too old for any Run to take (holdFresh).
func (h *Hold) stale() bool {
	return h != nil && h.ready != nil && time.Since(h.made) >= holdFresh
}

// wait returns the hold once made. A non-nil error: the run cannot be held as it must
// (the keeper did not start, or a cgroup bound the user asked for cannot be had).
func (h *Hold) wait() (*lifetime.Keeper, *cgroup.Group, *runCgroup, error) {
	<-h.ready
	return h.kept, h.group, h.host, h.err
}

// Release ends a hold no Run took: its cgroup is removed and its keeper told the run is
// over. It does nothing to a hold a Run took (the Run ends that), and may be called more
// than once.
func (h *Hold) Release() {
	if h == nil || h.ready == nil || !h.taken.CompareAndSwap(false, true) {
		return
	}
	h.end()
}

// end removes the cgroup, then lets the keeper go: the keeper must outlive the cgroup, so
// that a caller dying in between still has its cgroup removed.
func (h *Hold) end() {
	h.once.Do(func() {
		<-h.ready
		h.group.End(cgroupEndBound)
		h.kept.Release()
	})
}
