package cfs

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestReplayCountsOnlyAndQueue replays demand near and below its mean use
// (work waits for minutes) and far above it, with and without burst, with
// and without wall-clock demand: the counts-only replay (nil histogram)
// counts as the full one does, and the full one with its queue compacted
// and its runs of periods served on arrival stepped over is the full one
// walked period by period with a queue never compacted, every figure and
// the delay histogram alike.
func TestReplayCountsOnlyAndQueue(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 7))
	var at, usage []time.Duration
	var u time.Duration
	for i := range 60_000 { // 10 minutes
		ts := time.Duration(i)*10*time.Millisecond + time.Duration(rng.IntN(1000))*time.Microsecond
		// Bursts at 0.3 cores, but for one second in three: idle periods
		// stop the period timer.
		if i > 0 && (i/100)%3 != 2 && rng.Float64() < 0.9 {
			u += 5 * time.Millisecond
		}
		at, usage = append(at, ts), append(usage, u)
	}
	at[0] = 0
	d := FromSamples(at, usage)
	ms := time.Millisecond
	compacted := 0
	for _, phase := range []time.Duration{0, 30 * ms} {
		ps := Cut(d, 100*ms, phase)
		for _, q := range []time.Duration{28 * ms, 29 * ms, 30 * ms, 31 * ms, 35 * ms, 60 * ms} {
			for _, burst := range []time.Duration{0, q} {
				for _, wall := range []bool{false, true} {
					s := Setting{Quota: q, Burst: burst, Cores: d.Bound(), WallClock: wall}
					var h DelayHist
					var scratch Scratch
					got := ps.Replay(s, &h, &scratch)
					if q == 28*ms && !wall {
						// Below the mean use: work waits from the start
						// to the end, and the queue holds what waits.
						if c := cap(scratch.queues[0]); c < len(at)/4 {
							compacted++
						} else {
							t.Errorf("quota %s burst %s phase %s: the queue grew to %d chunks for %d samples", q, burst, phase, c, len(at))
						}
					}
					var rh DelayHist
					ref := ps.replay([]Setting{s}, []*DelayHist{&rh}, nil, walk{neverCompact: true, periodByPeriod: true})[0]
					if got.Stat != ref.Stat || got.ThrottledNs != ref.ThrottledNs || got.LostNs != ref.LostNs || !reflect.DeepEqual(h, rh) {
						t.Errorf("quota %s burst %s wall %v phase %s: compacted %+v, never compacted %+v", q, burst, wall, phase, got, ref)
					}
					counts := ps.Replay(s, nil, nil)
					if counts.Stat != ref.Stat || counts.ThrottledNs != ref.ThrottledNs || counts.LostNs != ref.LostNs || counts.Hist != nil {
						t.Errorf("quota %s burst %s wall %v phase %s: counts only %+v, full %+v", q, burst, wall, phase, counts, ref)
					}
				}
			}
		}
	}
	if compacted != 4 {
		t.Errorf("%d of 4 replays below the mean use compacted their queue", compacted)
	}
}
