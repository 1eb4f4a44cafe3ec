package cfs

import (
	"math"
	"testing"
	"time"
)

// TestCoresBoundIgnoresALateReading: one busy thread sampled every 10 ms,
// one reading 4 ms late (its clock read before the preemption), is one CPU;
// the single interval's 1.4 cores made it two before. Two threads busy for
// 30 ms are two.
func TestCoresBoundIgnoresALateReading(t *testing.T) {
	var one CoresBound
	for i := range 20 {
		du := 10 * time.Millisecond
		switch i {
		case 7:
			du += 4 * time.Millisecond // the late reading
		case 8:
			du -= 4 * time.Millisecond // the next interval returns it
		}
		one.Add(10*time.Millisecond, du)
	}
	if c := one.Cores(); c != 1 {
		t.Errorf("one thread with a late reading: bound %d, want 1", c)
	}
	var two CoresBound
	for i := range 20 {
		du := 2 * time.Millisecond
		if i >= 5 && i < 8 {
			du = 20 * time.Millisecond
		}
		two.Add(10*time.Millisecond, du)
	}
	if c := two.Cores(); c != 2 {
		t.Errorf("two threads for 30 ms: bound %d, want 2", c)
	}
	var idle CoresBound
	if c := idle.Cores(); c != 1 {
		t.Errorf("no samples: bound %d, want 1", c)
	}
}

// TestScaledReadsAsACopy: a demand scaled where it is read (Scaled) cuts,
// replays and bounds exactly as the same samples scaled into a copy: the
// level windows of advise rely on it to stay byte for byte the same.
func TestScaledReadsAsACopy(t *testing.T) {
	const n = 6000
	at, usage := make([]time.Duration, n), make([]time.Duration, n)
	var u time.Duration
	for i := range n {
		at[i] = time.Duration(i)*10*time.Millisecond + time.Duration(i*7919%13)*time.Microsecond
		// Bursts of up to 2 cores between idle stretches, with odd
		// nanoseconds so that the scale rounds.
		if i%50 < 12 {
			u += time.Duration(3_000_000 + i*104729%17_000_001)
		} else {
			u += time.Duration(i * 7 % 1_000_003)
		}
		usage[i] = u
	}
	d := FromSamples(at, usage).Pinned()
	for _, f := range []float64{0.97, 1.03} {
		s := d.Scaled(f)
		cp := make([]time.Duration, n)
		for k, v := range d.Usage {
			cp[k] = d.Usage[0] + time.Duration(math.Round(float64(v-d.Usage[0])*f))
		}
		c := d.Derive(d.At, cp, 0)
		if &s.Usage[0] != &d.Usage[0] {
			t.Fatalf("scale %v: Scaled copied the samples", f)
		}
		if s.Work() != c.Work() || s.MaxCores() != c.MaxCores() || s.Bound() != c.Bound() {
			t.Fatalf("scale %v: work %s, max %v, bound %v; the copy's %s, %v, %v", f, s.Work(), s.MaxCores(), s.Bound(), c.Work(), c.MaxCores(), c.Bound())
		}
		if s.Work() == d.Work() {
			t.Fatalf("scale %v: the work %s is d's: nothing scaled", f, s.Work())
		}
		for _, q := range []time.Duration{20 * time.Millisecond, 45 * time.Millisecond} {
			var hs, hc DelayHist
			ps, pc := Cut(s, 100*time.Millisecond, 30*time.Millisecond), Cut(c, 100*time.Millisecond, 30*time.Millisecond)
			for k := range ps.Work {
				if ps.Work[k] != pc.Work[k] {
					t.Fatalf("scale %v: period %d holds %v, the copy's %v", f, k, ps.Work[k], pc.Work[k])
				}
			}
			st := Setting{Quota: q, Cores: c.Bound()}
			rs, rc := ps.Replay(st, &hs, nil), pc.Replay(st, &hc, nil)
			if rs.Stat != rc.Stat || rs.ThrottledNs != rc.ThrottledNs || rs.LostNs != rc.LostNs || hs != hc {
				t.Fatalf("scale %v, quota %s: replayed %+v, the copy %+v", f, q, rs.Stat, rc.Stat)
			}
			if rs.Stat.ThrottledPeriods == 0 {
				t.Fatalf("scale %v, quota %s: nothing throttled: the test shows nothing", f, q)
			}
		}
	}
}
