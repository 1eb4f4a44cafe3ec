package cfs

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// manyDemand is 5 minutes of 10 ms samples, jittered: 5 ms bursts on a
// trickle, an idle stretch of 30 s (the period timer stops), 20 s at 1.5
// cores (work waits under every quota below it), and late readings (a
// sample holding more than the group's 2 CPUs could run in it).
func manyDemand(seed uint64) *Demand {
	rng := rand.New(rand.NewPCG(seed, 11))
	var at, usage []time.Duration
	var u time.Duration
	for i := range 30_000 {
		ts := time.Duration(i) * 10 * time.Millisecond
		if i > 0 && i%7 != 0 { // every 7th sample on the 10 ms grid: some ticks fall on a sample
			ts += time.Duration(rng.IntN(1000)) * time.Microsecond
		}
		var work time.Duration
		switch {
		case i >= 6000 && i < 9000: // idle
		case i >= 15000 && i < 17000: // 1.5 cores
			work = 15 * time.Millisecond
		case i%997 == 0: // a late reading: 30 ms of work read in one sample
			work = 30 * time.Millisecond
		default:
			work = time.Duration(rng.IntN(200)) * time.Microsecond
			if rng.Float64() < 0.25 {
				work += 5 * time.Millisecond
			}
		}
		if i > 0 {
			u += work
		}
		at, usage = append(at, ts), append(usage, u)
	}
	d := FromSamples(at, usage)
	d.Cores = 2
	return d
}

// TestReplayManyIsReplay replays many settings in one walk (ReplayMany)
// and each on its own (Replay), on varied demand (bursts, an idle stretch,
// work waiting for seconds, late readings; the demand itself, scaled as
// advise's level windows are, and a view of part of it as its blocks are),
// at two phases, with quotas on both sides of the busiest and the median
// period's work (the fast path's boundaries), with and without burst, with
// and without a histogram, and with wall-clock demand: every figure and
// every histogram is the same, bit for bit.
func TestReplayManyIsReplay(t *testing.T) {
	ms := time.Millisecond
	base := manyDemand(5)
	demands := map[string]*Demand{
		"demand": base,
		"scaled": base.Scaled(1.03),
		"view":   base.View(5000, 20000),
	}
	for name, d := range demands {
		for _, phase := range []time.Duration{0, 30 * ms} {
			ps := Cut(d, 100*ms, phase)
			busiest, median := 0.0, medianWork(ps.Work)
			for _, w := range ps.Work {
				busiest = max(busiest, w)
			}
			var quotas []time.Duration
			for _, w := range []float64{busiest, median} {
				q := time.Duration(w)
				quotas = append(quotas, q-1, q, q+1, q+2)
			}
			quotas = append(quotas, 5*ms, 10*ms, 14*ms, 20*ms, 40*ms, 160*ms)
			for _, wall := range []bool{false, true} {
				var settings []Setting
				for _, q := range quotas {
					for _, burst := range []time.Duration{0, q / 2} {
						settings = append(settings, Setting{Quota: q, Burst: burst, Cores: d.Bound(), WallClock: wall})
					}
				}
				hists := make([]*DelayHist, len(settings))
				for i := range hists {
					if i%5 != 3 { // some count only
						hists[i] = &DelayHist{}
					}
				}
				var scratch Scratch
				got := ps.ReplayMany(settings, hists, &scratch)
				for i, s := range settings {
					var h *DelayHist
					if hists[i] != nil {
						h = &DelayHist{}
					}
					want := ps.Replay(s, h, nil)
					what := fmt.Sprintf("%s phase %s %+v", name, phase, s)
					if got[i].Stat != want.Stat || got[i].ThrottledNs != want.ThrottledNs || got[i].LostNs != want.LostNs {
						t.Errorf("%s: one walk for %d settings %+v, alone %+v", what, len(settings), got[i], want)
					}
					if !reflect.DeepEqual(hists[i], h) {
						t.Errorf("%s: one walk's delays differ from the setting's own", what)
					}
				}
				if wall {
					continue
				}
				// The demand must make the cases the test is for.
				var waited, free, throttled int
				for i, r := range got {
					if r.Stat.ThrottledPeriods == 0 {
						free++
					} else {
						throttled++
					}
					if hists[i] != nil && hists[i].Max() > float64(time.Second) {
						waited++
					}
				}
				if free == 0 || throttled == 0 || waited == 0 {
					t.Errorf("%s phase %s: %d settings never throttled, %d throttled, %d with work waiting over 1 s: want some of each", name, phase, free, throttled, waited)
				}
			}
		}
	}
}

// TestReplayManyMixed replays settings of two parallelism bounds and both
// kinds of demand in one call: each is replayed as on its own, in the order
// given.
func TestReplayManyMixed(t *testing.T) {
	d := manyDemand(9)
	ps := Cut(d, 100*time.Millisecond, 0)
	settings := []Setting{
		{Quota: 20 * time.Millisecond, Cores: 2},
		{Quota: 20 * time.Millisecond, Cores: 1},
		{Quota: 40 * time.Millisecond, Cores: 2, WallClock: true},
		{Quota: 14 * time.Millisecond, Burst: 10 * time.Millisecond, Cores: 2},
	}
	hists := make([]*DelayHist, len(settings))
	for i := range hists {
		hists[i] = &DelayHist{}
	}
	got := ps.ReplayMany(settings, hists, nil)
	for i, s := range settings {
		var h DelayHist
		want := ps.Replay(s, &h, nil)
		if got[i].Stat != want.Stat || got[i].ThrottledNs != want.ThrottledNs || got[i].LostNs != want.LostNs || !reflect.DeepEqual(*hists[i], h) {
			t.Errorf("%+v: in a mixed walk %+v, alone %+v", s, got[i], want)
		}
	}
}

// medianWork is the median of a cut's period work.
func medianWork(w []float64) float64 {
	s := slices.Clone(w)
	slices.Sort(s)
	return s[len(s)/2]
}
