package probe

import (
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	comm, ppid := parseStat("42 (weird) name)) S 7 42 42 0 -1")
	if comm != "weird) name)" || ppid != 7 {
		t.Errorf("got %q %d", comm, ppid)
	}
}

// TestLaunchingKeepsOthersOutOfAJudgedWindow: while a judged launch's bwrap has not
// started, no other launch of the process begins (its close-on-exec sweep would stand in
// for the judged one's, whose descriptors are then judged), and a judged launch waits for
// a launch under way to start its bwrap; each may go on once the other's bwrap runs.
func TestLaunchingKeepsOthersOutOfAJudgedWindow(t *testing.T) {
	for _, first := range []bool{true, false} {
		holding := make(chan func())
		finish := make(chan struct{})
		go Launching(first, func(started func()) { holding <- started; <-finish })
		started := <-holding
		entered := make(chan struct{})
		go Launching(!first, func(func()) { close(entered) })
		select {
		case <-entered:
			t.Fatalf("judged %v: the other launch began before the first one's bwrap started", first)
		case <-time.After(50 * time.Millisecond):
		}
		started()
		select {
		case <-entered:
		case <-time.After(5 * time.Second):
			t.Fatalf("judged %v: the other launch still waits once the first one's bwrap started", first)
		}
		close(finish)
	}
}
