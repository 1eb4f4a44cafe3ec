package cfs

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cfs/cfstest"
)

// underQuota runs, at 1 ms steps, one thread asked for burst of work every
// every, first at offset, under quota per 100 ms period (cfstest), and
// returns 10 ms readings: the arrivals (the true demand), the use and
// nr_throttled (counted at the refill).
func underQuota(span, burst, every, offset, quota time.Duration) (arrived, used *Demand, thr []uint64) {
	return underQuotaBG(time.Millisecond, span, burst, every, offset, quota, 0)
}

// underQuotaBG is underQuota in steps of step, with background work of bg
// arriving every 10 ms besides the bursts.
func underQuotaBG(step, span, burst, every, offset, quota, bg time.Duration) (arrived, used *Demand, thr []uint64) {
	s := cfstest.UnderQuota(step, span, burst, every, offset, quota, bg)
	return &Demand{At: s.At, Usage: s.Arrived, Cores: 1, Arrivals: true}, &Demand{At: slices.Clone(s.At), Usage: s.Used, Cores: 1}, s.Throttled
}

// pooled is a replay at quota per 100 ms period over 10 phases, pooled as
// advise pools them: throttled periods over periods, and the mean periods.
type pooled struct{ ThrottledRatio, Periods float64 }

func replayPhases(t *testing.T, d *Demand, quota time.Duration) pooled {
	t.Helper()
	const period, phases = 100 * time.Millisecond, 10
	if err := d.Check(period); err != nil {
		t.Fatal(err)
	}
	var periods, throttled uint64
	for ph := range phases {
		var h DelayHist
		r := Cut(d, period, period*time.Duration(ph)/phases).Replay(Setting{Quota: quota, Cores: d.Bound()}, &h, nil)
		periods, throttled = periods+r.Stat.Periods, throttled+r.Stat.ThrottledPeriods
	}
	return pooled{float64(throttled) / float64(max(periods, 1)), float64(periods) / phases}
}

// TestReconstructRecoversBursts: a 50 ms burst every 400 ms sampled under
// 200m runs as 20 ms a period, so replayed as use 425m looks unthrottled;
// the reconstruction moves each burst back to its start and predicts what
// the true demand does at 425m.
func TestReconstructRecoversBursts(t *testing.T) {
	arrived, used, thr := underQuota(60*time.Second, 50*time.Millisecond, 400*time.Millisecond, 37*time.Millisecond, 20*time.Millisecond)
	if thr[len(thr)-1] < 100 {
		t.Fatalf("the sampled group was throttled %d times: the test's kernel is wrong", thr[len(thr)-1])
	}
	rec, b := Reconstruct(used, thr, 100*time.Millisecond)
	if len(rec.At) != len(used.At) {
		t.Fatalf("%d readings reconstructed from %d", len(rec.At), len(used.At))
	}
	if rec.Work() != used.Work() {
		t.Errorf("work %s reconstructed from %s: it must be kept", rec.Work(), used.Work())
	}
	if b.Moved == 0 || b.Capped != 0 {
		t.Errorf("moved %s, capped %s", b.Moved, b.Capped)
	}
	share := func(d *Demand) float64 { return replayPhases(t, d, 42500*time.Microsecond).ThrottledRatio }
	truth, obs, got := share(arrived), share(used), share(rec)
	t.Logf("at 425m: true demand %.3f, observed use %.3f, reconstructed %.3f", truth, obs, got)
	if truth < 0.15 {
		t.Fatalf("the true demand is throttled %.3f at 425m: the test's premise is wrong", truth)
	}
	if obs > 0.05 {
		t.Errorf("observed use throttled %.3f at 425m: the premise (use hides the bursts) is wrong", obs)
	}
	if got < truth-0.05 || got > truth+0.1 {
		t.Errorf("reconstructed %.3f against the true %.3f", got, truth)
	}
}

// TestReconstructLeavesUnthrottledAlone: without throttling the demand is
// the use, reading for reading.
func TestReconstructLeavesUnthrottledAlone(t *testing.T) {
	_, used, thr := underQuota(10*time.Second, 50*time.Millisecond, 400*time.Millisecond, 37*time.Millisecond, 100*time.Millisecond)
	if thr[len(thr)-1] != 0 {
		t.Fatal("throttled under a full quota")
	}
	rec, b := Reconstruct(used, thr, 100*time.Millisecond)
	for i := range used.At {
		if rec.At[i] != used.At[i] || rec.Usage[i] != used.Usage[i] {
			t.Fatalf("reading %d: %v/%v from %v/%v", i, rec.At[i], rec.Usage[i], used.At[i], used.Usage[i])
		}
	}
	if b.Moved != 0 {
		t.Errorf("moved %s", b.Moved)
	}
}

// TestReconstructCapsLongStreaks: a group throttled in every period shows
// nothing of its demand above the limit; it is passed on as observed and
// counted.
func TestReconstructCapsLongStreaks(t *testing.T) {
	_, used, thr := underQuota(10*time.Second, 2*time.Second, 5*time.Second, 0, 20*time.Millisecond)
	rec, b := Reconstruct(used, thr, 100*time.Millisecond)
	if b.Capped < time.Second {
		t.Errorf("capped %s of a group throttled for 10 s", b.Capped)
	}
	if rec.Work() != used.Work() || len(rec.At) != len(used.At) {
		t.Errorf("work %s/%s, readings %d/%d", rec.Work(), used.Work(), len(rec.At), len(used.At))
	}
}

// TestReconstructJitteredSample: one sample read 1.5 ms early shows a
// one-thread group at 1.18 CPUs; streaks are still found whole (a busy
// interval is one CPU's worth, not the highest use seen).
func TestReconstructJitteredSample(t *testing.T) {
	arrived, used, thr := underQuota(60*time.Second, 50*time.Millisecond, 400*time.Millisecond, 37*time.Millisecond, 20*time.Millisecond)
	k := -1
	for i := 2; i < len(used.At); i++ {
		if used.Usage[i]-used.Usage[i-1] == 10*time.Millisecond {
			k = i
			break
		}
	}
	used.At[k] -= 1500 * time.Microsecond
	if c := used.MaxCores(); c < 1.1 {
		t.Fatalf("the jittered sample reads %.2f CPUs", c)
	}
	used.Cores = 1
	rec, _ := Reconstruct(used, thr, 100*time.Millisecond)
	truth, got := replayPhases(t, arrived, 42500*time.Microsecond), replayPhases(t, rec, 42500*time.Microsecond)
	if d := got.ThrottledRatio - truth.ThrottledRatio; d < -0.05 || d > 0.1 {
		t.Errorf("reconstructed %.3f against the true %.3f at 425m", got.ThrottledRatio, truth.ThrottledRatio)
	}
}

// TestReconstructKeepsBackgroundUse: a server with background work (0.2 and
// 0.5 ms every 10 ms) besides its bursts, sampled under 200m. Moved with
// the bursts, the background left the streaks' later periods idle: the
// replay at 400m counted 992 active periods where the true demand has 1201,
// and a throttled share of 0.271 against the true 0.200. The background
// (the median calm interval) now keeps arriving through each streak.
func TestReconstructKeepsBackgroundUse(t *testing.T) {
	for _, bg := range []time.Duration{200 * time.Microsecond, 500 * time.Microsecond} {
		for _, every := range []time.Duration{400 * time.Millisecond, 397 * time.Millisecond} {
			arrived, used, thr := underQuotaBG(100*time.Microsecond, 120*time.Second, 50*time.Millisecond, every, 37*time.Millisecond, 20*time.Millisecond, bg)
			rec, b := Reconstruct(used, thr, 100*time.Millisecond)
			if b.Moved == 0 {
				t.Fatalf("bg %s every %s: nothing moved", bg, every)
			}
			tr, gr := replayPhases(t, arrived, 40*time.Millisecond), replayPhases(t, rec, 40*time.Millisecond)
			if math.Abs(gr.ThrottledRatio-tr.ThrottledRatio) > 0.03 || math.Abs(gr.Periods-tr.Periods) > 0.08*tr.Periods {
				t.Errorf("bg %s every %s at 400m: rebuilt %.3f (%.0f periods), true demand %.3f (%.0f periods)", bg, every, gr.ThrottledRatio, gr.Periods, tr.ThrottledRatio, tr.Periods)
			}
		}
	}
}

// TestReconstructSpinnerOnALoadedHost: a thread that never stops, under
// 200m, is throttled in every period it gets its CPU; on a loaded host a
// throttle count now and then comes more than a period after the last one
// (another task held the CPU for most of a period, so the quota was not used
// up; or a sample read late shows a refill under an earlier stamp). Ending
// the streak there split the group's throttling into streaks short enough
// to move: nothing was capped, and the advice read from the rebuilt demand
// was not marked a lower bound (the agent's TestRealAgent failed now and
// then). A streak now ends only when more than two periods pass without a
// throttle; what is capped is nearly the whole span.
func TestReconstructSpinnerOnALoadedHost(t *testing.T) {
	const span = 10 * time.Second
	hosts := map[string]cfstest.Host{
		// Before every third refill, the sample stamped 20 ms before it is
		// read 1 ms after it, as are the two after it (a sweep held up 21
		// ms): the first two show the refill under earlier stamps.
		"read late": {Late: func(n int) time.Duration {
			if k := (n + 2) % 10; (n+2)/10%3 == 0 && k < 3 {
				return time.Duration(21-10*k) * time.Millisecond
			}
			return 0
		}},
		// Every fourth period another task holds the CPU for its first 85
		// ms: the spinner runs 15 ms and is not throttled.
		"held": {Held: func(t time.Duration) bool {
			return t/(100*time.Millisecond)%4 == 1 && t%(100*time.Millisecond) < 85*time.Millisecond
		}},
	}
	for name, h := range hosts {
		s := cfstest.UnderQuotaOn(h, time.Millisecond, span, 2*span, 2*span, 0, 20*time.Millisecond, 0)
		used := &Demand{At: s.At, Usage: s.Used, Cores: 1}
		gaps := 0 // throttle counts more than a period after the one before
		last := -1
		for i := 1; i < len(s.At); i++ {
			if s.Throttled[i] > s.Throttled[i-1] {
				if last >= 0 && s.At[i-1]-s.At[last] > 100*time.Millisecond {
					gaps++
				}
				last = i
			}
		}
		if gaps < 10 {
			t.Fatalf("%s: %d throttle counts came more than a period after the last: the test's host is wrong", name, gaps)
		}
		_, b := Reconstruct(used, s.Throttled, 100*time.Millisecond)
		if b.Capped < span*8/10 || b.Moved > 0 {
			t.Errorf("%s: capped %s, moved %s of a spinner throttled for %s", name, b.Capped, b.Moved, span)
		}
	}
}

// TestReconstructRecoversBurstsPerCPU is TestReconstructRecoversBursts with
// a per-CPU split, as the agent and advise --cgroup read it: the burst's
// thread runs on CPU 0 for one burst and CPU 1 for the next (a Go server's
// request goroutines move between its threads), so the split spans two
// CPUs and the throttling counts come from the per-CPU slice replay. That
// replay served a CPU's moved work as fast as it arrived: each rebuilt
// burst ran within the streak's first 10 ms interval, and at 400m every
// burst throttled a period (0.331 of the periods, against 0.226 for the
// same bursts sampled unthrottled; make e2e-fleet's probe predicted 0.330
// where the kernel counted 0.225). Moved work now waits on its CPU and runs
// at one CPU's rate, as the thread that ran it did.
func TestReconstructRecoversBurstsPerCPU(t *testing.T) {
	const every, offset = 400 * time.Millisecond, 37 * time.Millisecond
	_, used, thr := underQuota(60*time.Second, 50*time.Millisecond, every, offset, 20*time.Millisecond)
	// The true demand as the thread runs it without a limit (a quota of a
	// whole CPU): what advise --csv replays from samples taken unthrottled.
	_, free, _ := underQuota(60*time.Second, 50*time.Millisecond, every, offset, 100*time.Millisecond)
	// The burst k's thread runs on CPU k mod 2; a burst under 200m ends
	// within 300 ms, before the next one.
	split := func(d *Demand) [][]time.Duration {
		per := [][]time.Duration{make([]time.Duration, len(d.At)), make([]time.Duration, len(d.At))}
		for i := 1; i < len(d.At); i++ {
			c := int((max(d.At[i-1]-offset, 0) / every) % 2)
			per[0][i], per[1][i] = per[0][i-1], per[1][i-1]
			per[c][i] += d.Usage[i] - d.Usage[i-1]
		}
		return per
	}
	free.PerCPU, used.PerCPU = split(free), split(used)
	rec, b := Reconstruct(used, thr, 100*time.Millisecond)
	if b.Moved == 0 || rec.PerCPU == nil || !rec.Arrivals {
		t.Fatalf("moved %s, split %v, arrivals %v: the rebuilt demand must hold moved work and the split", b.Moved, rec.PerCPU != nil, rec.Arrivals)
	}
	sliced := func(d *Demand, quota time.Duration) float64 {
		sp := d.Split()
		if sp == nil || sp.N != 2 {
			t.Fatalf("no split over 2 CPUs")
		}
		var periods, throttled uint64
		for ph := range 10 {
			st, _ := Cut(d, 100*time.Millisecond, 10*time.Millisecond*time.Duration(ph)).ReplaySlices(quota, 0, sp)
			periods, throttled = periods+st.Periods, throttled+st.ThrottledPeriods
		}
		return float64(throttled) / float64(periods)
	}
	for _, quota := range []time.Duration{40 * time.Millisecond, 42500 * time.Microsecond} {
		truth, got := sliced(free, quota), sliced(rec, quota)
		t.Logf("at %s per period: true demand %.3f, reconstructed %.3f", quota, truth, got)
		if truth < 0.1 {
			t.Fatalf("the true demand is throttled %.3f: the test's premise is wrong", truth)
		}
		if got < truth-0.05 || got > truth+0.07 {
			t.Errorf("at %s per period: reconstructed %.3f against the true %.3f", quota, got, truth)
		}
	}
}
