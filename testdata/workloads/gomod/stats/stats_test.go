package stats

import (
	"os"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestWritesStayInTempDirs: a test's own scratch files go to TMPDIR, not the project.
func TestWritesStayInTempDirs(t *testing.T) {
	if err := os.WriteFile(t.TempDir()+"/scratch", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}
