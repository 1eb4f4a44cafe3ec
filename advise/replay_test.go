package advise

import (
	"math"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
)

// demandOf samples a demand given as cores over time every 10 ms for span.
func demandOf(span time.Duration, cores func(t time.Duration) float64) *Demand {
	var at, usage []time.Duration
	var u float64
	for t := time.Duration(0); t <= span; t += 10 * time.Millisecond {
		if t > 0 {
			u += cores(t-5*time.Millisecond) * float64(10*time.Millisecond)
		}
		at, usage = append(at, t), append(usage, time.Duration(math.Round(u)))
	}
	return cfs.FromSamples(at, usage)
}

func constant(c float64) func(time.Duration) float64 { return func(time.Duration) float64 { return c } }

// TestEvaluateSharesUnthrottledReplays checks Evaluate's shortcut: points
// whose quota covers every period replay once per phase, and each gets what
// its own replay would give.
func TestEvaluateSharesUnthrottledReplays(t *testing.T) {
	ms := time.Millisecond
	// A burst of 1 core for 50 ms every second over 0.1 cores: periods of 5
	// to 50 ms of work.
	d := demandOf(20*time.Second, func(t time.Duration) float64 {
		if t%time.Second < 50*ms {
			return 1
		}
		return 0.1
	})
	// Largest first, so a wrong shortcut would hand a throttling point the
	// shared result.
	points := []Point{{2000, 1000, 100 * ms}, {900, 0, 100 * ms}, {600, 600, 100 * ms}, {600, 0, 100 * ms}, {400, 0, 100 * ms}, {300, 0, 100 * ms}}
	all, err := Evaluate(d, points, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range points {
		one, err := Evaluate(d, []Point{p}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if all[i] != one[0] {
			t.Errorf("%s: in a grid %+v, alone %+v", p, all[i], one[0])
		}
	}
	if all[5].ThrottledRatio == 0 || all[0].ThrottledRatio != 0 {
		t.Errorf("300m throttled %.3f, 2 CPUs throttled %.3f: want some, then none", all[5].ThrottledRatio, all[0].ThrottledRatio)
	}
}
