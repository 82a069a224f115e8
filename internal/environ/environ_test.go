package environ

import (
	"slices"
	"testing"
)

func TestLookup(t *testing.T) {
	env := []string{"PATH=/bin", "EMPTY=", "NOEQUALS", "PATH=/usr/bin", "X=a=b", "PATHX=no"}
	cases := []struct {
		name, value string
		found       bool
	}{
		{"PATH", "/usr/bin", true}, // the last entry wins
		{"EMPTY", "", true},
		{"NOEQUALS", "", false}, // not an assignment
		{"X", "a=b", true},
		{"PAT", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		value, found := Lookup(env, c.name)
		if value != c.value || found != c.found {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", c.name, value, found, c.value, c.found)
		}
		if got := Getenv(env)(c.name); got != c.value {
			t.Errorf("Getenv(%q) = %q", c.name, got)
		}
	}
}

func TestMerge(t *testing.T) {
	got := Merge([]string{"A=1", "B=2", "A=3", "C=4"}, []string{"A=new", "D=5"})
	if want := []string{"B=2", "C=4", "A=new", "D=5"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := Merge(nil, nil); len(got) != 0 {
		t.Errorf("empty merge: %q", got)
	}
	if Name("A=b=c") != "A" || Name("plain") != "plain" {
		t.Error("Name")
	}
}
