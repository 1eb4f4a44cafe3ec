package cgroup

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

const ms = time.Millisecond

// synthetic is a group's CPU activity: busy (one core) in the given spans,
// with the period timer firing at phase + n*period while limited.
type synthetic struct {
	busy          [][2]time.Duration // spans may overlap: several threads
	period, phase time.Duration      // period 0: no quota, nr_periods stays 0
	timerOff      bool               // limited, but the timer never ran
	// throttledAtBoundary: the group is throttled when each period ends
	// (nr_throttled moves with nr_periods).
	throttledAtBoundary bool
}

func (g synthetic) at(t time.Duration) PeakPoint {
	var u time.Duration
	for _, b := range g.busy {
		if t > b[0] {
			u += min(t, b[1]) - b[0]
		}
	}
	var n uint64
	if g.period > 0 && !g.timerOff && t >= g.phase {
		n = uint64((t-g.phase)/g.period) + 1
	}
	p := PeakPoint{At: t, UsageNs: uint64(u), Periods: n}
	if g.throttledAtBoundary {
		p.Throttled = n
	}
	return p
}

// throttledAt returns the activity of a group with quota per period that is
// always runnable: it runs from each period's start until the quota is spent.
func throttledAt(quota, period, phase, until time.Duration) synthetic {
	g := synthetic{period: period, phase: phase, throttledAtBoundary: true}
	for s := phase - period; s < until; s += period {
		g.busy = append(g.busy, [2]time.Duration{max(s, 0), max(s+quota, 0)})
	}
	return g
}

// early is a group that spends the same time early in each period, by
// itself (not throttled): the boundaries are only known to a sample slot.
func early(busy, period, phase, until time.Duration) synthetic {
	g := throttledAt(busy, period, phase, until)
	g.throttledAtBoundary = false
	return g
}

// steady is a group busy a fraction of every 1 ms.
func steady(frac float64, period, phase, until time.Duration) synthetic {
	g := synthetic{period: period, phase: phase}
	on := time.Duration(frac * float64(ms))
	for s := time.Duration(0); s < until; s += ms {
		g.busy = append(g.busy, [2]time.Duration{s, s + on})
	}
	return g
}

func TestPeakWithinPeriod(t *testing.T) {
	burst := steady(0.1, 100*ms, 5*ms, 2*time.Second)
	// A second thread busy 60 ms within one period, not near its ends.
	burst.busy = append(burst.busy, [2]time.Duration{1020 * ms, 1080 * ms})
	unlimited := steady(0.3, 0, 0, 2*time.Second)
	unlimited.busy = append(unlimited.busy, [2]time.Duration{1000 * ms, 1050 * ms}) // 50 ms at full speed
	tests := []struct {
		name      string
		g         synthetic
		window    time.Duration
		jitter    time.Duration // samples every 10 ms +- jitter
		want, tol float64
		basis     string
	}{
		{"throttled at 0.2, samples in step with the period", throttledAt(20*ms, 100*ms, 3*ms, 2*time.Second), 100 * ms, 0, 0.2, 1e-9, BasisPeriod},
		{"throttled at 0.2, samples 10+-1 ms apart", throttledAt(20*ms, 100*ms, 3*ms, 2*time.Second), 100 * ms, 1 * ms, 0.2, 1e-9, BasisPeriod},
		{"throttled at 0.2, samples 10+-4 ms apart", throttledAt(20*ms, 100*ms, 3*ms, 2*time.Second), 100 * ms, 4 * ms, 0.2, 1e-9, BasisPeriod},
		{"throttled at 0.5 with a 50 ms period", throttledAt(25*ms, 50*ms, 7*ms, 2*time.Second), 50 * ms, 2 * ms, 0.5, 1e-9, BasisPeriod},
		{"spending 20 ms early in each period, not Throttled: samples 10+-1 ms apart", early(20*ms, 100*ms, 3*ms, 2*time.Second), 100 * ms, 1 * ms, 0.2, 0.03, BasisPeriod},
		{"spending 20 ms early in each period, not Throttled: samples 10+-4 ms apart", early(20*ms, 100*ms, 3*ms, 2*time.Second), 100 * ms, 4 * ms, 0.2, 0.06, BasisPeriod},
		{"steady 0.5 under a 1-CPU limit", steady(0.5, 100*ms, 42*ms, 2*time.Second), 100 * ms, 3 * ms, 0.5, 0.002, BasisPeriod},
		{"one 60 ms burst in a period", burst, 100 * ms, 0, 0.7, 1e-9, BasisPeriod},
		{"no quota: 100 ms windows", unlimited, 100 * ms, 0, 0.8, 1e-9, BasisWindow},
		{"limited but idle: window fallback", synthetic{period: 100 * ms, timerOff: true}, 100 * ms, 0, 0, 0, BasisWindow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			p := NewPeakTracker(tt.g.period, tt.window)
			var sum float64
			var n int
			for k := 0; k < 200; k++ {
				at := time.Duration(k)*10*ms + 1*ms
				if tt.jitter > 0 {
					at += time.Duration(rng.Int64N(int64(2*tt.jitter))) - tt.jitter
				}
				p.Add(tt.g.at(at))
				if k%20 == 19 { // one-second intervals would take 100; shorter ones test carry-over
					got, basis, _, ok := p.Take()
					// The first interval may end before two boundaries were seen.
					if !ok || (basis != tt.basis && k > 20) {
						t.Fatalf("interval %d: ok %v basis %q, want %q", k/20, ok, basis, tt.basis)
					}
					if k > 20 { // the first marks may lack the sample before them
						sum, n = max(sum, got), n+1
					}
				}
			}
			if math.Abs(sum-tt.want) > tt.tol {
				t.Errorf("highest peak %.4f cores, want %.4f +- %.4f", sum, tt.want, tt.tol)
			}
		})
	}
}

func TestPeakAtLeastMean(t *testing.T) {
	// Whatever the activity, the estimates of consecutive periods add up to
	// the usage between the first and last boundary: the peak is at least
	// their mean.
	rng := rand.New(rand.NewPCG(3, 4))
	g := synthetic{period: 100 * ms, phase: 17 * ms}
	for s := time.Duration(0); s < 3*time.Second; s += time.Duration(rng.Int64N(int64(20 * ms))) {
		d := time.Duration(rng.Int64N(int64(15 * ms)))
		g.busy = append(g.busy, [2]time.Duration{s, s + d})
		s += d
	}
	p := NewPeakTracker(100*ms, 100*ms)
	var first, last PeakPoint
	for k := 0; k < 300; k++ {
		pt := g.at(time.Duration(k)*10*ms + time.Duration(rng.Int64N(int64(5*ms))))
		if k == 0 {
			first = pt
		}
		last = pt
		p.Add(pt)
	}
	peak, basis, _, _ := p.Take()
	mean := float64(last.UsageNs-first.UsageNs) / float64(last.At-first.At)
	if basis != BasisPeriod || peak < mean*0.97 {
		t.Errorf("peak %.3f (%s) below the mean %.3f", peak, basis, mean)
	}
}

func TestPeakSurvivesCounterReset(t *testing.T) {
	p := NewPeakTracker(100*ms, 100*ms)
	g := throttledAt(20*ms, 100*ms, 3*ms, time.Second)
	for k := 0; k < 50; k++ {
		p.Add(g.at(time.Duration(k) * 10 * ms))
	}
	// The group is made again: counters restart from zero.
	for k := 50; k < 100; k++ {
		pt := g.at(time.Duration(k-50) * 10 * ms)
		pt.At = time.Duration(k) * 10 * ms
		p.Add(pt)
	}
	peak, _, _, ok := p.Take()
	if !ok || peak < 0 || peak > 0.3 {
		t.Errorf("after a reset: peak %.3f ok %v, want about 0.2", peak, ok)
	}
}

// TestPeakStaleOrCoarse: an 80 ms burst over 1010-1090 ms of a group whose
// period timer ticks at 30 ms + n x 100 ms (its true peak within a period
// 0.6). Read every 10 ms: a peak between the boundaries. With cpu.stat
// carried over the burst (Stale) or read 100 ms apart (Coarse): the
// highest use over sliding windows of the period (basis window), which is
// at least the period's; 100 ms samples not marked Coarse give an
// estimate from boundaries placed at the slots' middles, below it: why
// the watcher marks them.
func TestPeakStaleOrCoarse(t *testing.T) {
	g := synthetic{period: 100 * ms, phase: 30 * ms, busy: [][2]time.Duration{{1010 * ms, 1090 * ms}}}
	for _, c := range []struct {
		name          string
		step          time.Duration
		stale, coarse bool
		want          float64
		basis         string
	}{
		{"every 10 ms", 10 * ms, false, false, 0.65, BasisPeriod},
		{"every 10 ms, cpu.stat carried over the burst", 10 * ms, true, false, 0.8, BasisWindow},
		{"every 100 ms, coarse", 100 * ms, false, true, 0.8, BasisWindow},
		{"every 100 ms, not marked coarse", 100 * ms, false, false, 0.4, BasisPeriod},
	} {
		p := NewPeakTracker(100*ms, 100*ms)
		for at := time.Duration(0); at <= 2*time.Second; at += c.step {
			pt := g.at(at)
			pt.Stale = c.stale && at > 500*ms && at < 1500*ms
			pt.Coarse = c.coarse && at > 0
			p.Add(pt)
		}
		cores, basis, window, ok := p.Take()
		if !ok || basis != c.basis || window != 100*ms || math.Abs(cores-c.want) > 0.01 {
			t.Errorf("%s: %.3f %s over %s (%v), want %.3f %s", c.name, cores, basis, window, ok, c.want, c.basis)
		}
		if basis == BasisWindow && cores < 0.6 {
			t.Errorf("%s: a window peak %.3f under the period's 0.6", c.name, cores)
		}
	}
}
