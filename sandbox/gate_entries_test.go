package sandbox

import (
	"strings"
	"testing"
)

// TestSameEntries: the overlay must show the checked directory's entries, name for name
// and inode for inode (or with xino's layer bits above a 32-bit number), and no others.
func TestSameEntries(t *testing.T) {
	checked := map[string]uint64{"go.mod": 11, "src": 12}
	if err := sameEntries("/p", map[string]uint64{"go.mod": 11, "src": 12}, checked); err != nil {
		t.Errorf("the same entries: %v", err)
	}
	if err := sameEntries("/p", map[string]uint64{"go.mod": 1<<33 | 11, "src": 12}, checked); err != nil {
		t.Errorf("an xino-numbered lower entry: %v", err)
	}
	for name, inside := range map[string]map[string]uint64{
		"one more entry":      {"go.mod": 11, "src": 12, "shadow": 13},
		"one entry fewer":     {"go.mod": 11},
		"another inode":       {"go.mod": 11, "src": 99},
		"another name":        {"go.mod": 11, "etc": 12},
		"a swapped directory": {"passwd": 21, "shadow": 22},
	} {
		if err := sameEntries("/p", inside, checked); err == nil || !strings.Contains(err.Error(), "swapped") {
			t.Errorf("%s: %v, want a refusal naming a swapped path", name, err)
		}
	}
}
