package doctor

import (
	"strings"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/home"
)

// TestMeasuredWhen: the homes check says when a size it reports was stored rather than
// walked now, and how old the oldest is, so a stored figure never passes for a fresh one.
func TestMeasuredWhen(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fresh := home.Entry{Measured: now.Add(-10 * time.Millisecond)}
	stored := func(age time.Duration) home.Entry { return home.Entry{Measured: now.Add(-age), Stored: true} }
	if got := measuredWhen([]home.Entry{fresh, fresh}, now); got != "sizes measured now" {
		t.Errorf("all walked: %q", got)
	}
	if got := measuredWhen(nil, now); got != "sizes measured now" {
		t.Errorf("no HOMEs: %q", got)
	}
	got := measuredWhen([]home.Entry{fresh, stored(3 * time.Minute), stored(42 * time.Minute)}, now)
	if !strings.Contains(got, "now for 1, stored for 2") || !strings.Contains(got, "the oldest 42m0s ago") {
		t.Errorf("stored figures: %q", got)
	}
}
