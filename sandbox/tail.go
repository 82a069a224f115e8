package sandbox

import (
	"io"
	"sync"
)

// tailWriter passes writes through and keeps the last max bytes, so a failure can be
// explained with bwrap's own words without holding all of a command's output.
type tailWriter struct {
	out io.Writer
	max int

	mu  sync.Mutex
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > w.max {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-w.max:]...)
	}
	if w.out == nil {
		return len(p), nil
	}
	// A closed or failing output must not stop the sandbox; the tail is still kept.
	if _, err := w.out.Write(p); err != nil {
		w.out = nil
	}
	return len(p), nil
}

func (w *tailWriter) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}
