package advise

import (
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cfs/cfstest"
)

// day24h is a day of 10 ms samples (8.64 M): Poisson 5 ms bursts at 0.3
// cores with timestamps jittered by up to 1 ms, as a live sampler records.
func day24h(n int) *Demand {
	at, usage := cfstest.Day(n)
	return &Demand{At: at, Usage: usage}
}

// BenchmarkEvaluate24h evaluates a day of samples on a 50-point grid (25
// limits, each with and without burst) at 10 phases: the target is
// under 30 s on 2 cores.
func BenchmarkEvaluate24h(b *testing.B) {
	d := day24h(8_640_000)
	var points []Point
	for _, l := range Grid(d, 25) {
		points = append(points, Point{l, 0, 100 * time.Millisecond}, Point{l, l, 100 * time.Millisecond})
	}
	b.ReportMetric(float64(len(points)), "points")
	b.ResetTimer()
	for range b.N {
		if _, err := Evaluate(d, points, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvaluate1h is the same on an hour of samples, for quick runs.
func BenchmarkEvaluate1h(b *testing.B) {
	d := day24h(360_000)
	var points []Point
	for _, l := range Grid(d, 25) {
		points = append(points, Point{l, 0, 100 * time.Millisecond}, Point{l, l, 100 * time.Millisecond})
	}
	b.ResetTimer()
	for range b.N {
		if _, err := Evaluate(d, points, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
