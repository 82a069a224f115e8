package safefile

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadFile is the cost of the O_PATH, fstat and reopen over a plain os.ReadFile,
// for a probe-cache-sized file (run reads one on every start).
func BenchmarkReadFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), "entry")
	if err := os.WriteFile(path, make([]byte, 512), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Run("safefile", func(b *testing.B) {
		for range b.N {
			if _, err := ReadFile(path, 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os", func(b *testing.B) {
		for range b.N {
			if _, err := os.ReadFile(path); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkWriteFile is one atomic write with its two fsyncs, the cost a --report pays.
func BenchmarkWriteFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), "report.json")
	data := make([]byte, 512)
	for range b.N {
		if err := WriteFile(path, data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
}
