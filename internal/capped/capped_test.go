package capped

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestHeadKeepsTheFirstLimitBytes(t *testing.T) {
	stops := 0
	head := NewHead(func() { stops++ })
	chunk := bytes.Repeat([]byte("a"), 1000)
	for range 100 {
		if n, err := head.Write(chunk); n != len(chunk) || err != nil {
			t.Fatalf("a write must be claimed whole: %d %v", n, err)
		}
	}
	if head.Len() != Limit || !head.Exceeded() || !errors.Is(head.Err(), ErrExceeded) || stops != 1 {
		t.Fatalf("kept %d (want %d), exceeded %v, stops %d (want 1)", head.Len(), Limit, head.Exceeded(), stops)
	}
	exact := NewHead(nil)
	exact.Write(bytes.Repeat([]byte("b"), Limit))
	if exact.Exceeded() || exact.Err() != nil {
		t.Fatal("exactly Limit bytes is not more than Limit")
	}
}

func TestTailKeepsTheLastBytesAndPassesAllThrough(t *testing.T) {
	var out bytes.Buffer
	tail := &Tail{Out: &out}
	for i := range 2000 {
		tail.Write([]byte(strings.Repeat("x", i%7) + "\n"))
	}
	tail.Write([]byte("bwrap: the last words\n"))
	if len(tail.String()) != TailLimit || !strings.HasSuffix(tail.String(), "bwrap: the last words\n") {
		t.Fatalf("tail %d bytes (want %d), ends %q", len(tail.String()), TailLimit, tail.String()[len(tail.String())-30:])
	}
	if !strings.HasSuffix(out.String(), "the last words\n") || out.Len() <= TailLimit {
		t.Fatalf("everything must pass through: %d bytes", out.Len())
	}
}

// TestHeadStopsARealFlood: yes(1) prints without end; the Head's stop (the context's
// cancel, not its timeout) ends it at the bound, and what is kept is the bound.
func TestHeadStopsARealFlood(t *testing.T) {
	yes, err := exec.LookPath("yes")
	if err != nil {
		t.Skip("no yes(1)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	head := NewHead(cancel)
	cmd := exec.CommandContext(ctx, yes)
	cmd.Stdout = head
	cmd.WaitDelay = time.Second
	cmd.Run()
	if !head.Exceeded() || head.Len() != Limit {
		t.Fatalf("kept %d, exceeded %v", head.Len(), head.Exceeded())
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("the flood was not stopped at the bound but ran on to its timeout: %v", ctx.Err())
	}
}
