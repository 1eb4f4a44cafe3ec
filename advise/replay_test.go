package advise

import (
	"math"
	"testing"
	"time"
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
	return FromSamples(at, usage)
}

func constant(c float64) func(time.Duration) float64 { return func(time.Duration) float64 { return c } }

// between is c cores from a to b, and a trickle of 1 ms at the very start so
// the period timer has run (and the burst pool filled) before.
func between(c float64, a, b time.Duration) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		switch {
		case t >= a && t < b:
			return c
		case t < 10*time.Millisecond:
			return 0.1
		}
		return 0
	}
}

func TestReplayHandChecked(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name   string
		d      *Demand
		p      Point
		phases int
		// want
		ratio                float64
		periods, throttled   float64
		p50, p99, maxDelayMs float64 // -1: do not check
	}{
		{"constant 0.5 under a 600m limit: nothing", demandOf(10*time.Second, constant(0.5)), Point{600, 0, 100 * ms}, 10,
			0, 100, 0, 0, 0, 0},
		{"constant 0.5 over a 400m limit: every period throttled", demandOf(10*time.Second, constant(0.5)), Point{400, 0, 100 * ms}, 1,
			1, 100, 100, -1, -1, -1},
		// 50 ms of one core at 1.00 s, quota 20 ms: 20 ms run, 30 wait; 20 of
		// them run at the refill at 1.10 (waited 80 ms), 10 at 1.20 (160 ms).
		// Ticks counted: 0.1 and 0.2 (the trickle), 1.1, 1.2 (both throttled),
		// 1.3, 1.4 (idle: the timer stops).
		{"one burst spends the quota early", demandOf(3*time.Second, between(1, time.Second, 1050*ms)), Point{200, 0, 100 * ms}, 1,
			2.0 / 6, 6, 2, 80, 160, 160},
		// With 20 ms of burst the pool holds 40 ms after the idle periods:
		// 10 ms wait for the refill at 1.10; the middle of that sample, at 1.045,
		// runs at 1.105: 60 ms.
		{"burst capacity absorbs most of it", demandOf(3*time.Second, between(1, time.Second, 1050*ms)), Point{200, 200, 100 * ms}, 1,
			1.0 / 5, 5, 1, 0, 60, 60},
		{"burst capacity absorbs all of it", demandOf(3*time.Second, between(1, time.Second, 1050*ms)), Point{300, 300, 100 * ms}, 1,
			0, 5, 0, 0, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs, err := Evaluate(tc.d, []Point{tc.p}, Options{Phases: tc.phases})
			if err != nil {
				t.Fatal(err)
			}
			e := evs[0]
			near := func(got, want, tol float64) bool { return math.Abs(got-want) <= tol }
			if !near(e.ThrottledRatio, tc.ratio, 0.011) || !near(e.Periods, tc.periods, 1) || !near(e.ThrottledPeriods, tc.throttled, 1) {
				t.Errorf("throttled %.0f of %.0f periods (%.3f); want %.0f of %.0f (%.3f)", e.ThrottledPeriods, e.Periods, e.ThrottledRatio, tc.throttled, tc.periods, tc.ratio)
			}
			for _, c := range []struct {
				name      string
				got, want float64
			}{{"p50", e.DelayP50Ms, tc.p50}, {"p99", e.DelayP99Ms, tc.p99}, {"max", e.DelayMaxMs, tc.maxDelayMs}} {
				if c.want >= 0 && !near(c.got, c.want, 0.04*c.want+0.01) {
					t.Errorf("added delay %s %.2f ms, want %.2f ms", c.name, c.got, c.want)
				}
			}
		})
	}
}

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

// TestReplayWallClock: demand bound to wall-clock time loses what finds the
// pool dry instead of queueing it.
func TestReplayWallClock(t *testing.T) {
	ms := time.Millisecond
	// 50 ms of one core at 1.00 s, quota 20 ms: 20 ms run, 30 ms are lost
	// and the group stays throttled until the tick at 1.10. Ticks counted:
	// 0.1, 0.2 (the trickle, then idle), 1.1 (throttled), 1.2, 1.3 (idle).
	d := demandOf(3*time.Second, between(1, time.Second, 1050*ms))
	for _, tc := range []struct {
		wall                       bool
		periods, throttled, lostMs float64
		p99Ms                      float64
	}{
		{true, 5, 1, 30, 0},
		{false, 6, 2, 0, 160},
	} {
		evs, err := Evaluate(d, []Point{{200, 0, 100 * ms}}, Options{Phases: 1, WallClock: tc.wall})
		if err != nil {
			t.Fatal(err)
		}
		e := evs[0]
		if e.Periods != tc.periods || e.ThrottledPeriods != tc.throttled || math.Abs(e.LostSeconds*1e3-tc.lostMs) > 0.5 || math.Abs(e.DelayP99Ms-tc.p99Ms) > 0.05*tc.p99Ms+0.01 {
			t.Errorf("wall clock %v: %.0f of %.0f periods throttled, %.1f ms lost, p99 %.1f ms; want %.0f of %.0f, %.0f ms, %.0f ms",
				tc.wall, e.ThrottledPeriods, e.Periods, e.LostSeconds*1e3, e.DelayP99Ms, tc.throttled, tc.periods, tc.lostMs, tc.p99Ms)
		}
	}
}
