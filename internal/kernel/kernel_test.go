package kernel

import "testing"

func TestAtLeast(t *testing.T) {
	t.Parallel()
	tests := []struct {
		release      string
		major, minor int
		want         bool
	}{
		{"6.18.44-fc-v1045", 5, 11, true},
		{"5.11.0", 5, 11, true},
		{"5.10.209-1", 5, 11, false},
		{"4.19.0-27-amd64", 5, 11, false},
		{"5.15.153.1-microsoft-standard-WSL2", 5, 11, true},
		{"4.2.0", 4, 2, true},
		{"4.1.52+", 4, 2, false},
		{"3.10.0-1160.el7.x86_64", 4, 2, false},
		{"10.0", 5, 11, true},
		{"", 4, 2, false},
		{"six.one", 4, 2, false},
		{"6", 4, 2, false},
	}
	for _, test := range tests {
		if got := AtLeast(test.release, test.major, test.minor); got != test.want {
			t.Errorf("AtLeast(%q, %d, %d) = %v, want %v", test.release, test.major, test.minor, got, test.want)
		}
	}
}
