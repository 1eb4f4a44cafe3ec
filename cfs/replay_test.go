package cfs

import (
	"math"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cfs/cfstest"
)

// demandOf samples a demand given as cores over time every 10 ms for span.
func demandOf(span time.Duration, cores func(t time.Duration) float64) *Demand {
	return FromSamples(cfstest.Curve(span, cores))
}

var constant = cfstest.Constant

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
		name         string
		d            *Demand
		quota, burst time.Duration
		// want
		ratio                float64
		periods, throttled   float64
		p50, p99, maxDelayMs float64 // -1: do not check
	}{
		{"constant 0.5 under a 60 ms quota: nothing", demandOf(10*time.Second, constant(0.5)), 60 * ms, 0,
			0, 100, 0, 0, 0, 0},
		{"constant 0.5 over a 40 ms quota: every period throttled", demandOf(10*time.Second, constant(0.5)), 40 * ms, 0,
			1, 100, 100, -1, -1, -1},
		// 50 ms of one core at 1.00 s, quota 20 ms: 20 ms run, 30 wait; 20 of
		// them run at the refill at 1.10 (waited 80 ms), 10 at 1.20 (160 ms).
		// Ticks counted: 0.1 and 0.2 (the trickle), 1.1, 1.2 (both throttled),
		// 1.3, 1.4 (idle: the timer stops).
		{"one burst spends the quota early", demandOf(3*time.Second, between(1, time.Second, 1050*ms)), 20 * ms, 0,
			2.0 / 6, 6, 2, 80, 160, 160},
		// With 20 ms of burst the pool holds 40 ms after the idle periods:
		// 10 ms wait for the refill at 1.10; the middle of that sample, at 1.045,
		// runs at 1.105: 60 ms.
		{"burst capacity absorbs most of it", demandOf(3*time.Second, between(1, time.Second, 1050*ms)), 20 * ms, 20 * ms,
			1.0 / 5, 5, 1, 0, 60, 60},
		{"burst capacity absorbs all of it", demandOf(3*time.Second, between(1, time.Second, 1050*ms)), 30 * ms, 30 * ms,
			0, 5, 0, 0, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := replayOnce(t, tc.d, Setting{Quota: tc.quota, Burst: tc.burst, Cores: tc.d.Bound()})
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
		e := replayOnce(t, d, Setting{Quota: 20 * ms, Cores: d.Bound(), WallClock: tc.wall})
		if e.Periods != tc.periods || e.ThrottledPeriods != tc.throttled || math.Abs(e.LostSeconds*1e3-tc.lostMs) > 0.5 || math.Abs(e.DelayP99Ms-tc.p99Ms) > 0.05*tc.p99Ms+0.01 {
			t.Errorf("wall clock %v: %.0f of %.0f periods throttled, %.1f ms lost, p99 %.1f ms; want %.0f of %.0f, %.0f ms, %.0f ms",
				tc.wall, e.ThrottledPeriods, e.Periods, e.LostSeconds*1e3, e.DelayP99Ms, tc.throttled, tc.periods, tc.lostMs, tc.p99Ms)
		}
	}
}

// replayed is one replay's counts in Evaluate's units.
type replayed struct {
	ThrottledRatio, Periods, ThrottledPeriods float64
	LostSeconds                               float64
	DelayP50Ms, DelayP99Ms, DelayMaxMs        float64
}

// replayOnce replays d through s at phase 0 of a 100 ms period.
func replayOnce(t *testing.T, d *Demand, s Setting) replayed {
	t.Helper()
	if err := d.Check(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var h DelayHist
	r := Cut(d, 100*time.Millisecond, 0).Replay(s, &h, nil)
	e := replayed{Periods: float64(r.Stat.Periods), ThrottledPeriods: float64(r.Stat.ThrottledPeriods), LostSeconds: r.LostNs / 1e9,
		DelayP50Ms: h.Quantile(0.5) / 1e6, DelayP99Ms: h.Quantile(0.99) / 1e6, DelayMaxMs: h.Max() / 1e6}
	if r.Stat.Periods > 0 {
		e.ThrottledRatio = e.ThrottledPeriods / e.Periods
	}
	return e
}

// TestDelayHistQuantile checks the histogram's buckets: exact to the
// microsecond below 64 us, 3% above, and capped at the longest delay.
func TestDelayHistQuantile(t *testing.T) {
	var h DelayHist
	if h.Quantile(0.99) != 0 || h.ZeroShare() != 1 {
		t.Fatalf("empty: p99 %.0f, zero share %.2f; want 0, 1", h.Quantile(0.99), h.ZeroShare())
	}
	h.Add(0, 50)
	h.Add(10e3, 40)
	h.Add(5e6, 10)
	for _, c := range []struct{ q, want, tol float64 }{{0.5, 0, 0}, {0.6, 10.5e3, 0}, {0.9, 10.5e3, 0}, {0.99, 5e6, 0.03 * 5e6}} {
		if got := h.Quantile(c.q); math.Abs(got-c.want) > c.tol {
			t.Errorf("q%.2f: %.0f ns, want %.0f", c.q, got, c.want)
		}
	}
	if h.Max() != 5e6 || h.ZeroShare() != 0.5 {
		t.Errorf("max %.0f, zero share %.2f; want 5e6, 0.5", h.Max(), h.ZeroShare())
	}
	var o DelayHist
	o.Add(2e6, 100)
	h.Merge(&o)
	if got := h.Quantile(0.9); math.Abs(got-2e6) > 0.03*2e6 {
		t.Errorf("merged q0.90: %.0f ns, want about 2e6", got)
	}
}

// TestReplaySplitsWorkServedBeforeTheWait: work that arrives while held-back
// work catches up, and is partly served before the pool runs dry at the
// sample's end, waits for the refill only for the part not served. One
// CPU, a 40 ms quota: 50 ms of work from 1.15 s runs out the pool at 1.19 s
// (10 ms held back); 0.8 cores from 1.20 s to 1.24 s then catch up behind
// it at one CPU, and the pool runs dry again exactly at 1.24 s, when 6 of
// the last sample's 8 ms have run (waited 2.5-4 ms) and 2 ms wait for the
// refill at 1.30 s (62-62.5 ms). Recorded whole at its middle, the last
// sample's 8 ms would all count about 63 ms: a twentieth of the work, where
// 2 ms (2.4%) waited that long.
func TestReplaySplitsWorkServedBeforeTheWait(t *testing.T) {
	ms := time.Millisecond
	d := demandOf(3*time.Second, func(t time.Duration) float64 {
		switch {
		case t < 10*ms:
			return 0.1
		case t >= 1150*ms && t < 1200*ms:
			return 1
		case t >= 1200*ms && t < 1240*ms:
			return 0.8
		}
		return 0
	})
	if d.Bound() != 1 {
		t.Fatalf("bound %v, want 1", d.Bound())
	}
	var h DelayHist
	Cut(d, 100*ms, 0).Replay(Setting{Quota: 40 * ms, Cores: 1}, &h, nil)
	// 83 ms of work: 2 ms (2.4%) waited about 62 ms, the next 34 ms (41%)
	// 2.5 to 10 ms, the rest none.
	if got := h.Max() / 1e6; math.Abs(got-62.25) > 0.1 {
		t.Errorf("longest delay %.2f ms, want 62.25 ms (the waiting part's middle)", got)
	}
	if got := h.Quantile(0.99) / 1e6; math.Abs(got-62) > 2 {
		t.Errorf("p99 delay %.2f ms, want about 62 ms", got)
	}
	if got := h.Quantile(0.96) / 1e6; got > 10.5 {
		t.Errorf("p96 delay %.2f ms, want 10 ms or less: work served before the pool ran dry counted as waiting for the refill", got)
	}
}

// TestReplayLateReading: a sample above the group's parallelism bound (a
// reading taken late) holds work the group did after its instant, which
// arrives after it in the replay, within its period. Two CPUs, a 40 ms
// quota: the group runs both from 1.13 s; its readings give 2, 2, 2.6 and
// 1.4 cores (the one at 1.16 s 3 ms late). The pool runs dry at 1.15 s, and
// the 40 ms after it wait for the refill at 1.20 s and run on two CPUs: each
// unit 50 ms, as the group ran them at two CPUs. Served as read, the late
// reading's work would arrive faster than the group can run and count 51.5
// ms (its middle's wait). The period's sum, and so its throttling, is the
// readings'.
func TestReplayLateReading(t *testing.T) {
	ms := time.Millisecond
	d := demandOf(3*time.Second, func(t time.Duration) float64 {
		switch {
		case t < 10*ms:
			return 0.1
		case t >= 1130*ms && t < 1150*ms:
			return 2
		case t >= 1150*ms && t < 1160*ms:
			return 2.6
		case t >= 1160*ms && t < 1170*ms:
			return 1.4
		}
		return 0
	})
	if d.Bound() != 2 {
		t.Fatalf("bound %v, want 2", d.Bound())
	}
	e := replayOnce(t, d, Setting{Quota: 40 * ms, Cores: 2})
	if e.ThrottledPeriods != 1 {
		t.Errorf("%.0f periods throttled, want 1 (1.20 s)", e.ThrottledPeriods)
	}
	if math.Abs(e.DelayMaxMs-50) > 0.1 || math.Abs(e.DelayP99Ms-50) > 1.5 {
		t.Errorf("delays p99/max %.2f/%.2f ms, want 50/50 ms", e.DelayP99Ms, e.DelayMaxMs)
	}
	// A reading above the bound at the period's end stays in its period
	// (the next reading is the next period's): 10 ms at 2.6 cores from
	// 1.19 s, served on arrival under an unlimited quota.
	d = demandOf(3*time.Second, func(t time.Duration) float64 {
		switch {
		case t < 10*ms:
			return 0.1
		case t >= 1170*ms && t < 1190*ms:
			return 2
		case t >= 1190*ms && t < 1200*ms:
			return 2.6
		}
		return 0
	})
	ps := Cut(d, 100*ms, 0)
	if got := ps.Work[11] / 1e6; math.Abs(got-66) > 0.01 {
		t.Errorf("period 1.1-1.2 s holds %.3f ms of work, want 66", got)
	}
	e = replayOnce(t, d, Setting{Quota: 40 * ms, Cores: 2})
	if e.ThrottledPeriods != 1 {
		t.Errorf("%.0f periods throttled, want 1", e.ThrottledPeriods)
	}
}
