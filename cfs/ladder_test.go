package cfs

import (
	"encoding/csv"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/testenv"
)

// bursty is span of 10 ms samples (jittered by up to 1 ms) of work that
// comes in bursts: each sample starts a burst of up to cores CPUs with
// probability p, on top of a steady trickle.
func bursty(seed uint64, span time.Duration, cores int, p float64) *Demand {
	rng := rand.New(rand.NewPCG(seed, 7))
	var at, usage []time.Duration
	var u time.Duration
	for t := time.Duration(0); t <= span; t += 10 * time.Millisecond {
		ts := t
		if t > 0 {
			ts += time.Duration(rng.IntN(1000)) * time.Microsecond
			dt := ts - at[len(at)-1]
			work := time.Duration(rng.IntN(300)) * time.Microsecond
			if rng.Float64() < p {
				work += time.Duration(rng.Float64() * float64(cores) * float64(dt))
			}
			u += min(work, time.Duration(cores)*dt)
		}
		at, usage = append(at, ts), append(usage, u)
	}
	d := FromSamples(at, usage)
	d.Cores = cores
	return d
}

// quantized is span of samples exactly 10 ms apart of work in whole
// microseconds: 5 ms bursts on each of cores CPUs with probability 0.6 per
// sample, over a trickle.
func quantized(seed uint64, span time.Duration, cores int) *Demand {
	rng := rand.New(rand.NewPCG(seed, 13))
	var at, usage []time.Duration
	var u time.Duration
	for t := time.Duration(0); t <= span; t += 10 * time.Millisecond {
		if t > 0 {
			for range cores {
				if rng.Float64() < 0.6 {
					u += 5 * time.Millisecond
				}
			}
			u += time.Duration(rng.IntN(100)) * time.Microsecond
		}
		at, usage = append(at, t), append(usage, u)
	}
	d := FromSamples(at, usage)
	d.Cores = cores
	return d
}

// lateRead is span of samples stamped exactly 10 ms apart of bursty work
// on up to cores CPUs, each read up to 3 ms late (the sampler wakes after
// its instant): an interval read late holds work of the next one, and many
// show more than cores CPUs (the replay's late readings).
func lateRead(seed uint64, span time.Duration, cores int) *Demand {
	rng := rand.New(rand.NewPCG(seed, 17))
	var at, usage []time.Duration
	var run time.Duration                                 // the group's use up to the last instant
	rate := make([]float64, span/(10*time.Millisecond)+2) // cores busy in each 10 ms
	for i := range rate {
		if rng.Float64() < 0.3 {
			rate[i] = float64(1 + rng.IntN(cores))
		} else {
			rate[i] = 0.02
		}
	}
	for i := 0; time.Duration(i)*10*time.Millisecond <= span; i++ {
		late := time.Duration(rng.IntN(3000)) * time.Microsecond
		if i == 0 {
			late = 0
		}
		at = append(at, time.Duration(i)*10*time.Millisecond)
		usage = append(usage, run+time.Duration(rate[i]*float64(late)))
		run += time.Duration(rate[i] * float64(10*time.Millisecond))
	}
	d := FromSamples(at, usage)
	d.Cores = cores
	return d
}

// recorded reads the recorded demand of advise's testdata (a program that
// changes regime halfway, sampled live at 10 ms).
func recorded(t testing.TB) *Demand {
	fh, err := os.Open("../advise/testdata/two-regime.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	rows, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var at, usage []time.Duration
	for _, r := range rows[1:] {
		a, _ := strconv.ParseInt(r[0], 10, 64)
		u, _ := strconv.ParseInt(r[1], 10, 64)
		at, usage = append(at, time.Duration(a)), append(usage, time.Duration(u))
	}
	return FromSamples(at, usage)
}

// ladderOf is n quotas spaced evenly from lo to hi cores, each without and
// with a burst equal to the quota.
func ladderOf(lo, hi float64, n int, period time.Duration, cores float64) []Setting {
	var out []Setting
	for i := range n {
		c := lo + (hi-lo)*float64(i)/float64(n-1)
		q := time.Duration(c*float64(period)/float64(time.Microsecond)) * time.Microsecond
		out = append(out, Setting{Quota: q, Cores: cores}, Setting{Quota: q, Burst: q, Cores: cores})
	}
	return out
}

// TestCountLadderMatchesReplay is the property: on recorded and random
// demand (use as sampled, and arrivals as Reconstruct makes them), at every
// phase, CountLadder's counts are Replay's exactly wherever it says they are
// exact, it leaves only a few settings to Replay, and without burst the
// throttled count never rises as the quota rises.
func TestCountLadderMatchesReplay(t *testing.T) {
	testenv.Arithmetic(t)
	type tc struct {
		name   string
		d      *Demand
		period time.Duration
	}
	cases := []tc{{"recorded two-regime", recorded(t), 100 * time.Millisecond}}
	for seed := range uint64(4) {
		// Quantized: samples exactly 10 ms apart with work in whole us, so
		// that period sums land exactly on quotas (whole us) and a hair
		// from the fast path's threshold, where the one pass decides
		// without a margin.
		q := quantized(seed, ladderSpan, 1+int(seed%2))
		cases = append(cases, tc{"quantized " + strconv.FormatUint(seed, 10), q, 100 * time.Millisecond})
	}
	for seed := range uint64(4) {
		// Late readings: samples above the bound, whose excess the replay
		// lets arrive after them within their period; the counts stay the
		// period sums' (CountLadder knows only those).
		cases = append(cases, tc{"late readings " + strconv.FormatUint(seed, 10), lateRead(seed, ladderSpan, 1+int(seed%2)), 100 * time.Millisecond})
	}
	for seed := range uint64(ladderSeeds) {
		cores := 1 + int(seed%3)
		period := []time.Duration{100 * time.Millisecond, 50 * time.Millisecond, 250 * time.Millisecond}[seed%3]
		cases = append(cases, tc{"random " + strconv.FormatUint(seed, 10), bursty(seed, ladderSpan, cores, 0.05+0.1*float64(seed%4)), period})
		// Arrivals (what Reconstruct makes): work that may come faster
		// than the group's CPUs run it.
		a := bursty(seed+100, ladderSpan, 2*cores, 0.05+0.1*float64(seed%4))
		a.Cores, a.Arrivals = cores, true
		cases = append(cases, tc{"arrivals " + strconv.FormatUint(seed, 10), a, period})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var total, inexact, burstRises int
			d := c.d.Pinned()
			if err := d.Check(c.period); err != nil {
				t.Fatal(err)
			}
			cores := d.Bound()
			settings := ladderOf(max(d.MeanCores()*0.5, 0.02), d.MaxCores()+0.1, 29, c.period, cores)
			for ph := range 10 {
				ps := Cut(d, c.period, c.period*time.Duration(ph)/10)
				counts := ps.CountLadder(settings)
				var prev [2]uint64
				for i, s := range settings {
					r := ps.Replay(s, &DelayHist{}, nil)
					total++
					if i >= 2 && r.Stat.ThrottledPeriods > prev[i%2] {
						// Without burst the pool starts every period at the
						// quota, and a larger one never serves less nor
						// leaves more waiting. With burst it can throttle
						// where a smaller quota does not: its timer may stop
						// with less carried over (Refill stops it after an
						// idle period, with the pool as that refill left it).
						if s.Burst == 0 {
							t.Errorf("phase %d: quota %s throttles %d periods, more than the quota below (%d)", ph, s.Quota, r.Stat.ThrottledPeriods, prev[i%2])
						} else {
							burstRises++
						}
					}
					prev[i%2] = r.Stat.ThrottledPeriods
					if !counts[i].Exact {
						inexact++
						continue
					}
					if counts[i].Periods != r.Stat.Periods || counts[i].ThrottledPeriods != r.Stat.ThrottledPeriods {
						t.Errorf("phase %d: quota %s burst %s: one pass %d/%d periods throttled, replay %d/%d",
							ph, s.Quota, s.Burst, counts[i].ThrottledPeriods, counts[i].Periods, r.Stat.ThrottledPeriods, r.Stat.Periods)
					}
				}
			}
			t.Logf("%d of %d settings left to replay; %d settings with burst throttle more than the quota below", inexact, total, burstRises)
			// Arrivals queue for the CPUs within a period, and the
			// queue's end lands near a threshold more often.
			allowed := total / 10
			if c.d.Arrivals {
				allowed = total / 4
			}
			if inexact > allowed {
				t.Errorf("%d of %d settings left to replay: the one pass decides too few", inexact, total)
			}
		})
	}
}

// BenchmarkLadder compares, on an hour of bursty 10 ms samples on 2 CPUs at
// one phase, the whole 58-point ladder replayed point by point (Replay,
// today's path) and counted in one pass (CountLadder, with the settings it
// leaves to Replay replayed), and reports the ratios: to the ladder's median
// point replayed alone, to its mean point (the per-point ladder / 58), and
// the per-point ladder's time over the one pass's.
func BenchmarkLadder(b *testing.B) {
	d := bursty(3, time.Hour, 2, 0.15).Pinned()
	period := 100 * time.Millisecond
	settings := ladderOf(d.MeanCores()*0.5, d.MaxCores(), 29, period, d.Bound())
	ps := Cut(d, period, 30*time.Millisecond)
	var h DelayHist
	var sc Scratch
	timeIt := func(f func()) float64 {
		start := time.Now()
		n := 0
		for time.Since(start) < 100*time.Millisecond || n < 3 {
			f()
			n++
		}
		return float64(time.Since(start)) / float64(n)
	}
	// Rounds alternate the three, so that a shared machine's load hits each
	// alike; the medians over the rounds are reported.
	var ones, perPoints, onePasses []float64
	for range b.N * 7 {
		ones = append(ones, timeIt(func() { ps.Replay(settings[len(settings)/2&^1], &h, &sc) })) // the middle limit, without burst
		perPoints = append(perPoints, timeIt(func() {
			for _, s := range settings {
				ps.Replay(s, &h, &sc)
			}
		}))
		onePasses = append(onePasses, timeIt(func() {
			for i, c := range ps.CountLadder(settings) {
				if !c.Exact {
					ps.Replay(settings[i], &h, &sc)
				}
			}
		}))
	}
	median := func(xs []float64) float64 { slices.Sort(xs); return xs[len(xs)/2] }
	one, perPoint, onePass := median(ones), median(perPoints), median(onePasses)
	b.ReportMetric(perPoint/one, "per-point/median-point")
	b.ReportMetric(onePass/one, "one-pass/median-point")
	b.ReportMetric(onePass/(perPoint/float64(len(settings))), "one-pass/mean-point")
	b.ReportMetric(perPoint/onePass, "speedup")
}

// The property test's random demands: how many, and how long each.
var (
	ladderSeeds = 12
	ladderSpan  = 2 * time.Minute
)
