package sandbox

import (
	"sync"
	"sync/atomic"

	"github.com/bwrapkit/bwrapkit/sandbox/cgroup"
	"github.com/bwrapkit/bwrapkit/sandbox/lifetime"
	"github.com/bwrapkit/bwrapkit/sandbox/limits"
)

// Hold is what holds one run besides bwrap: its keeper (Options.Keeper) and its cgroup
// (docs/lifetime.md). Both exist before bwrap does. Making them is a program start and a
// few cgroupfs writes, most of it the kernel's work: Run makes them itself, but a caller
// that has work of its own before Run (the CLI resolves the policy) can have them made
// meanwhile, on another CPU, with Prepare, and pass the Hold in Options.Hold.
type Hold struct {
	keeper string
	limits limits.Limits
	ready  chan struct{} // closed once the fields below are set
	kept   *lifetime.Keeper
	group  *cgroup.Group
	host   *runCgroup
	err    error
	taken  atomic.Bool
	once   sync.Once
}

// Prepare starts making a run's keeper (keeper names the executable, as Options.Keeper
// does; "" for none) and its cgroup for the bounds l (the policy's Limits), and returns
// at once. The Run it is passed to takes it over if it was made for that run's keeper and
// bounds, and makes its own otherwise; one no Run took must be Released.
func Prepare(keeper string, l limits.Limits) *Hold {
	h := &Hold{keeper: keeper, limits: l, ready: make(chan struct{})}
	go func() {
		defer close(h.ready)
		// The keeper starts on a goroutine of its own too: its fork and exec overlap with
		// reading the host's cgroup layout, and it is told of the cgroup before it is made.
		pending := startKeeper(keeper)
		group, host, cgroupErr := startCgroup(l, pending.wait)
		h.kept, h.err = pending.wait()
		h.group, h.host = group, host
		if h.err == nil {
			h.err = cgroupErr
		}
	}()
	return h
}

// take hands the hold to the run of keeper and bounds l: false when it was made for
// another run's, or was taken or released already.
func (h *Hold) take(keeper string, l limits.Limits) bool {
	return h != nil && h.keeper == keeper && h.limits == l && h.taken.CompareAndSwap(false, true)
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
	if h == nil || !h.taken.CompareAndSwap(false, true) {
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

// pendingKeeper is a run's keeper being started on a goroutine of its own.
type pendingKeeper struct {
	started chan struct{}
	keeper  *lifetime.Keeper
	err     error
}

// startKeeper starts executable as the run's keeper (lifetime.Start) without waiting for
// it; wait returns it. An empty executable: no keeper, and wait returns nil, nil.
func startKeeper(executable string) *pendingKeeper {
	p := &pendingKeeper{started: make(chan struct{})}
	if executable == "" {
		close(p.started)
		return p
	}
	go func() {
		defer close(p.started)
		p.keeper, p.err = lifetime.Start(executable)
	}()
	return p
}

func (p *pendingKeeper) wait() (*lifetime.Keeper, error) {
	<-p.started
	return p.keeper, p.err
}
