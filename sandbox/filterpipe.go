package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/sandbox/seccomp"
)

// heldFilter is the write end of the pipe bwrap reads its seccomp filter from: written
// once when the gate passes, and closed without the program otherwise, which makes bwrap
// fail before the command.
//
// Primed, the pipe also tells the gate when bwrap's setup is over. bwrap reads the
// filter only after it has built the whole sandbox (its last mount, the final pivot,
// the dropped capabilities), just before the command. So the pipe is shrunk to one page
// and filled with seccomp.Preamble before bwrap starts: it turns writable exactly when
// bwrap has read that page. That is one wake for the gate, where watching the mount table
// woke it at each of bwrap's mounts (about 50 for a default run, 550 with 500 --ro
// paths), and the sandbox is then finished and still: bwrap waits for the rest. The
// preamble alone is no filter the kernel loads, so a bwrap left with it and an end of
// file (bwrapkit died, the gate refused) still fails, never runs the command with a
// weaker filter; the program itself follows in one atomic write.
type heldFilter struct {
	pipe   *os.File // non-blocking, so the runtime's poller waits on it
	primed bool

	mu     sync.Mutex
	sent   bool // the program went in whole
	closed bool // by release or withhold: written once, at most
}

// newHeldFilter makes the filter pipe, primed where the host's page size allows a
// preamble (a 64 KiB page is more instructions than the kernel loads: the gate then
// watches the mounts instead). read is bwrap's end, blocking, for ExtraFiles.
func newHeldFilter(program []byte) (read *os.File, h *heldFilter, err error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	read = os.NewFile(uintptr(fds[0]), "seccomp filter")
	if err := unix.SetNonblock(fds[1], true); err != nil {
		read.Close()
		unix.Close(fds[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	h = &heldFilter{pipe: os.NewFile(uintptr(fds[1]), "seccomp filter")}
	// Only a pipe the runtime's poller took can be waited on as awaitRead does (a
	// deadline is how it is woken); otherwise the gate watches the mounts.
	if h.pipe.SetWriteDeadline(time.Time{}) == nil {
		if h.primed, err = h.prime(fds[1], program); err != nil {
			read.Close()
			h.withhold()
			return nil, nil, err
		}
	}
	return read, h, nil
}

// prime shrinks the pipe to one page and fills it with the preamble. false, with no
// error, leaves the pipe empty and unprimed: the page is too large for a preamble, the
// program is too large to follow it in one atomic write, or the pipe keeps its size. Once
// the preamble is going in, any failure is an error: part of a preamble in front of the
// program would make its first jump land inside the program.
func (h *heldFilter) prime(fd int, program []byte) (bool, error) {
	if len(program) > pipeAtomicWrite {
		return false, nil
	}
	page := os.Getpagesize()
	preamble, err := seccomp.Preamble(page, program)
	if err != nil {
		return false, nil
	}
	if size, err := unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, page); err != nil || size != page {
		return false, nil
	}
	if n, err := unix.Write(fd, preamble); err != nil || n != page {
		return false, fmt.Errorf("priming the seccomp filter pipe: wrote %d of %d bytes (%v)", n, page, err)
	}
	return true, nil
}

// awaitRead waits, parked in the runtime's poller, until bwrap has read the whole
// preamble (the pipe has room again), every reader has closed the pipe (bwrap is gone),
// or ctx ends. A wait blocked in the kernel would hold one of the runtime's Ps for the
// whole setup and keep its monitor thread waking every 20 µs.
func (h *heldFilter) awaitRead(ctx context.Context) error {
	raw, err := h.pipe.SyscallConn()
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = h.pipe.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	var revents int16
	err = raw.Write(func(fd uintptr) bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		if n, _ := unix.Poll(fds, 0); n > 0 {
			revents = fds[0].Revents
			return true
		}
		return false
	})
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return fmt.Errorf("waiting for bwrap to read its seccomp filter: %w", err)
	case revents&(unix.POLLERR|unix.POLLHUP) != 0:
		return childGoneError{errors.New("bwrap closed its seccomp filter pipe unread: the sandbox's child is gone")}
	}
	return nil
}

func (h *heldFilter) release(program []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errors.New("the sandbox was ended before its filter was released")
	}
	// Room for it all: the pipe is empty (unprimed) or bwrap has read the preamble.
	_, err := h.pipe.Write(program)
	h.pipe.Close()
	h.closed = true
	if err != nil {
		return fmt.Errorf("handing bwrap its seccomp filter: %w", err)
	}
	h.sent = true
	return nil
}

// withhold closes the pipe unless the program was written: bwrap then reads an end of
// file where its filter should be, and fails. A wait on the pipe returns.
func (h *heldFilter) withhold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.pipe.Close()
		h.closed = true
	}
}

func (h *heldFilter) released() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sent
}
