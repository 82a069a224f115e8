// Package stats is a small stdlib-only module that bwrapkit's workload tests build and
// test inside the sandbox.
package stats

import "sort"

// Median is the middle value of xs (the mean of the two middle ones for an even count).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sorted := append([]float64(nil), xs...)
	sort.Float64s(sorted)
	mid := len(sorted) / 2
	if len(sorted)%2 == 0 {
		return (sorted[mid-1] + sorted[mid]) / 2
	}
	return sorted[mid]
}
