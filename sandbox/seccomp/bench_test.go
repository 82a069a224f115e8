package seccomp

import "testing"

func BenchmarkProgram(b *testing.B) {
	for _, arch := range arches {
		b.Run(string(arch), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Program(arch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
