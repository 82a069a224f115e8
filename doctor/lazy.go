package doctor

import (
	"sync"
	"sync/atomic"
)

// lazy computes a value once, on first use. peek reads it without waiting, so the report
// never blocks on a fact whose check hung and was abandoned.
type lazy[T any] struct {
	once  sync.Once
	fn    func() T
	value T
	done  atomic.Bool
}

func newLazy[T any](fn func() T) *lazy[T] { return &lazy[T]{fn: fn} }

func (l *lazy[T]) get() T {
	l.once.Do(func() {
		l.value = l.fn()
		l.done.Store(true)
	})
	return l.value
}

func (l *lazy[T]) peek() (T, bool) {
	if l.done.Load() {
		return l.value, true
	}
	var zero T
	return zero, false
}
