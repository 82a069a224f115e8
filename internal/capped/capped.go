// Package capped bounds what bwrapkit keeps of a child's output (a bwrap probe, a
// package query, a self-test's report, bwrap's stderr): a child may print without end.
package capped

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

const (
	// Limit is the most bwrapkit keeps of one child's output: far above any answer a
	// child legitimately gives (bwrap --help is under 4 KiB, a self-test report under
	// 8 KiB), far below what could strain memory.
	Limit = 64 << 10
	// TailLimit is what is kept of a stream that passes through (bwrap's stderr during a
	// run): its last lines explain a failure.
	TailLimit = 4 << 10
)

// ErrExceeded is a child that printed more than Limit.
var ErrExceeded = fmt.Errorf("printed more than %d KiB", Limit>>10)

// Head keeps the first Limit bytes written to it and drops the rest; it is safe for
// two writers at once (exec.Cmd's stdout and stderr copies). A Head made with a stop
// function calls it once, as the bound is crossed, so a child that floods is ended at
// once instead of printing on until its timeout.
type Head struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	exceeded bool
	stop     func()
}

// NewHead is a Head that calls stop (a context's cancel, say) when the bound is crossed.
func NewHead(stop func()) *Head { return &Head{stop: stop} }

func (h *Head) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	room := Limit - h.buf.Len()
	h.buf.Write(p[:max(0, min(len(p), room))])
	if len(p) > room && !h.exceeded {
		h.exceeded = true
		if h.stop != nil {
			h.stop()
		}
	}
	// Claim the whole write: a short write would make exec.Cmd stop copying, and the
	// child would block on a full pipe instead of being drained or stopped.
	return len(p), nil
}

// Exceeded reports whether more than Limit was written.
func (h *Head) Exceeded() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.exceeded
}

// Err is ErrExceeded when the bound was crossed, else nil.
func (h *Head) Err() error {
	if h.Exceeded() {
		return ErrExceeded
	}
	return nil
}

// Bytes is a copy of what was kept.
func (h *Head) Bytes() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return bytes.Clone(h.buf.Bytes())
}

func (h *Head) String() string { return string(h.Bytes()) }

// Len is how much was kept.
func (h *Head) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.buf.Len()
}

// Tail passes every write through to Out and keeps the last TailLimit bytes. A failing
// Out is dropped, not reported: the stream's reader went away, and the child must not be
// stopped for that (the tail is still kept).
type Tail struct {
	Out io.Writer

	mu  sync.Mutex
	buf []byte
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > TailLimit {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-TailLimit:]...)
	}
	if t.Out != nil {
		if _, err := t.Out.Write(p); err != nil {
			t.Out = nil
		}
	}
	return len(p), nil
}

// String is the kept tail.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
