package probe

import "testing"

func TestParseStat(t *testing.T) {
	comm, ppid := parseStat("42 (weird) name)) S 7 42 42 0 -1")
	if comm != "weird) name)" || ppid != 7 {
		t.Errorf("got %q %d", comm, ppid)
	}
}
