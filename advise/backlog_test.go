package advise

import (
	"slices"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
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
// arriving every 10 ms besides the bursts (a server's timers and probes).
func underQuotaBG(step, span, burst, every, offset, quota, bg time.Duration) (arrived, used *Demand, thr []uint64) {
	s := cfstest.UnderQuota(step, span, burst, every, offset, quota, bg)
	return &Demand{At: s.At, Usage: s.Arrived, Cores: 1, Arrivals: true}, &Demand{At: slices.Clone(s.At), Usage: s.Used, Cores: 1}, s.Throttled
}

// TestDerivedDemandsReplayAsTheirSource: the blocks and the level replays
// of a rebuilt demand serve its moved work as arrivals too; dropped there,
// each block replayed a one-thread burst within one sample (0.333 at 425m
// where the whole window, on its one CPU, gives 0.200), and the interval
// reached far above the estimate of stationary bursts.
func TestDerivedDemandsReplayAsTheirSource(t *testing.T) {
	_, used, thr := underQuota(60*time.Second, 50*time.Millisecond, 400*time.Millisecond, 37*time.Millisecond, 20*time.Millisecond)
	rec, _ := cfs.Reconstruct(used, thr, 100*time.Millisecond)
	if !rec.Arrivals {
		t.Fatal("the rebuilt demand is not marked as arrivals")
	}
	for i, sub := range append(splitBlocks(rec, 3), scaled(rec, 1+LevelSpread)) {
		if !sub.Arrivals || sub.Cores != int(rec.Bound()) {
			t.Errorf("derived demand %d: arrivals %v, cores %d: want true, %d", i, sub.Arrivals, sub.Cores, int(rec.Bound()))
		}
	}
	a, err := Advise(rec, Request{Limits: []int64{425}}, Sampled{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range a.Evaluations {
		if e.LimitMilli == 425 && e.BurstMilli == 0 {
			if e.ThrottledRatioRange[1] > e.ThrottledRatio+0.06 {
				t.Errorf("425m: %.3f, interval %v: the blocks of stationary bursts disagree", e.ThrottledRatio, *e.ThrottledRatioRange)
			}
			return
		}
	}
	t.Fatal("425m not evaluated")
}
