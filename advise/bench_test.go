package advise

import (
	"runtime"
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

// BenchmarkAdviseKnee1h is Advise on an hour of samples (the day
// generator's first, KneeRefineSpan: the longest window refined) with the
// knee refined between the grid's limits and, in the same run, with the
// knee read off the grid alone (Options.gridKnee): each one's seconds and
// their ratio, the knee's cost.
func BenchmarkAdviseKnee1h(b *testing.B) {
	d := day24h(int(KneeRefineSpan / (10 * time.Millisecond)))
	run := func(gridKnee bool) time.Duration {
		runtime.GC()
		start := time.Now()
		if _, err := Advise(d, Request{Options: Options{gridKnee: gridKnee}}, Sampled{}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var with, without time.Duration
	b.ResetTimer()
	for range b.N {
		without += run(true)
		with += run(false)
	}
	n := float64(b.N)
	b.ReportMetric(with.Seconds()/n, "s/advise")
	b.ReportMetric(without.Seconds()/n, "s/advise-grid-knee")
	b.ReportMetric(float64(with)/float64(without), "knee-cost-ratio")
}
