package advise

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/cfs/cfstest"
)

// requests builds a sampled demand from Poisson arrivals of cost-long
// requests at rate per second, each on one CPU from its arrival, plus
// background cores from bgFrom on (a background job: 0 is none). Samples
// are 10 ms apart with up to 1 ms of jitter, like a real sampler's.
func requests(seed uint64, span time.Duration, rate float64, cost time.Duration, bgFrom time.Duration, bg float64) *Demand {
	rng := rand.New(rand.NewPCG(seed, 1))
	const step = 10 * time.Millisecond
	n := int(span/step) + 1
	busy := make([]float64, n) // ns of CPU in each step
	for t := 0.0; t < span.Seconds(); t += rng.ExpFloat64() / rate {
		start := time.Duration(t * 1e9)
		for left := cost; left > 0; {
			k := int(start / step)
			if k >= n {
				break
			}
			in := min(left, time.Duration(k+1)*step-start)
			busy[k] += float64(in)
			left -= in
			start += in
		}
	}
	var at, usage []time.Duration
	var u float64
	for k := 0; k < n; k++ {
		tk := time.Duration(k)*step + time.Duration(rng.IntN(1000))*time.Microsecond
		if k > 0 {
			u += busy[k-1]
			if time.Duration(k)*step > bgFrom && bg > 0 {
				u += bg * float64(step) * 2 * rng.Float64() // 0..2x bg: uneven background work
			}
		}
		at, usage = append(at, tk), append(usage, time.Duration(u))
	}
	return cfs.FromSamples(at, usage)
}

// TestTwoRegimes is the acceptance test of the intervals: a quiet service
// (20 requests/s of 5 ms) whose second half carries a background job (0.4
// cores on average, uneven) is judged non-stationary, the warning names
// the busy blocks with their times and mean use, the intervals are wide
// around the knee, and the recommendation meets the target in the busy
// blocks (above what the pooled window would advise). The same service
// without the job is judged stationary: the check can fail both ways.
func TestTwoRegimes(t *testing.T) {
	span := 60 * time.Second
	two := requests(7, span, 20, 5*time.Millisecond, span/2, 0.4)
	a, err := Advise(two, Request{}, Sampled{Source: "two regimes"})
	if err != nil {
		t.Fatal(err)
	}
	w := a.Window
	if len(w.Blocks) != 6 || w.BlockSeconds < 9.9 || w.BlockSeconds > 10.1 {
		t.Fatalf("%d blocks of %.1f s: want 6 of 10 s over 60 s", len(w.Blocks), w.BlockSeconds)
	}
	if w.Stationary {
		t.Fatalf("two regimes judged stationary; blocks %+v", w.Blocks)
	}
	for i, b := range w.Blocks {
		if b.Differs != (i >= 3) {
			t.Errorf("block %d (%.0f-%.0f s, %.3f cores): differs=%v, want %v", i, b.StartSeconds, b.EndSeconds, b.MeanCores, b.Differs, i >= 3)
		}
	}
	for _, want := range []string{"not stationary over the 1m window", "30-40 s (0.", "50-60 s (0.", "sample for 10m or longer"} {
		if !strings.Contains(w.Nonstationary, want) {
			t.Errorf("warning %q: want it to contain %q", w.Nonstationary, want)
		}
	}
	if !slices.Contains(a.Warnings, w.Nonstationary) {
		t.Error("the non-stationarity is not among the warnings")
	}
	r := a.Recommendation
	if !r.Met || r.LimitMilli <= w.WholeWindowLimitMilli {
		t.Errorf("recommended %dm (met %v); the whole window alone advises %dm: want the worst block's, above it", r.LimitMilli, r.Met, w.WholeWindowLimitMilli)
	}
	if r.ThrottledRatioRange == nil || r.ThrottledRatioRange[1] > r.Target.MaxThrottled {
		t.Errorf("recommendation's interval %v: want its upper end within the target %.2f", r.ThrottledRatioRange, r.Target.MaxThrottled)
	}
	// At the pooled window's limit the blocks disagree: a wide interval.
	for _, e := range a.Evaluations {
		if e.LimitMilli == w.WholeWindowLimitMilli && e.BurstMilli == 0 {
			if rg := e.ThrottledRatioRange; rg == nil || rg[0] > 0.01 || rg[1] <= a.Recommendation.Target.MaxThrottled {
				t.Errorf("at %dm the interval is %v: want it from the quiet blocks' ~0 to above the target in a busy one", e.LimitMilli, rg)
			}
		}
	}

	for seed := uint64(1); seed <= 6; seed++ {
		quiet := requests(seed, span, 20, 5*time.Millisecond, span, 0)
		q, err := Advise(quiet, Request{}, Sampled{Source: "quiet"})
		if err != nil {
			t.Fatal(err)
		}
		if !q.Window.Stationary {
			t.Errorf("seed %d: one regime judged non-stationary: %s", seed, q.Window.Nonstationary)
		}
		if q.Window.Widened != "" {
			t.Errorf("seed %d: clean samples widened: %s", seed, q.Window.Widened)
		}
	}
}

// TestBadInputWidens: a gap, a reset or a window shorter than two blocks
// gives advice with a warning and intervals at least as wide as the clean
// samples' (never narrower), widened by the tolerance.
func TestBadInputWidens(t *testing.T) {
	clean := requests(3, 30*time.Second, 40, 5*time.Millisecond, 0, 0)
	gap := requests(3, 30*time.Second, 40, 5*time.Millisecond, 0, 0)
	// A 3 s hole in the samples after 12 s.
	cut := cfs.FromSamples(append(append([]time.Duration(nil), gap.At[:1200]...), shifted(gap.At[1200:], 3*time.Second)...), gap.Usage)
	short := requests(3, 8*time.Second, 40, 5*time.Millisecond, 0, 0)
	// A restarted group: the counter starts again from 0 after 20 s.
	ru := append([]time.Duration(nil), clean.Usage...)
	for i := 2000; i < len(ru); i++ {
		ru[i] -= clean.Usage[2000]
	}
	reset := cfs.FromSamples(clean.At, ru)
	// The requests overlap only briefly, so the samples' parallelism bound
	// (CoresBound) depends on the window: pinned, the intervals differ by
	// what the bad input does alone.
	for _, d := range []*Demand{clean, cut, short, reset} {
		d.Cores = 2
	}
	base, err := Advise(clean, Request{}, Sampled{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, want string
		d          *Demand
	}{
		{"gap", "not valid", cut},
		{"short window", "shorter than two blocks", short},
		{"counter reset", "not valid", reset},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Advise(tc.d, Request{}, Sampled{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(a.Window.Widened, tc.want) {
				t.Fatalf("widened %q: want it to say %q", a.Window.Widened, tc.want)
			}
			for _, e := range a.Evaluations {
				rg := e.ThrottledRatioRange
				if rg[1] < min(1, e.ThrottledRatio+Tolerance(e.ThrottledRatio)) || rg[0] > max(0, e.ThrottledRatio-Tolerance(e.ThrottledRatio)) {
					t.Errorf("%s: interval %v around %.3f: want at least the tolerance either side", e.Point(), rg, e.ThrottledRatio)
				}
			}
			// Never narrower than the clean samples' at the same limits.
			for _, e := range a.Evaluations {
				for _, c := range base.Evaluations {
					if c.Point() == e.Point() && e.ThrottledRatioRange[1]-e.ThrottledRatioRange[0] < c.ThrottledRatioRange[1]-c.ThrottledRatioRange[0]-0.02 {
						t.Errorf("%s: interval %v narrower than the clean samples' %v", e.Point(), e.ThrottledRatioRange, c.ThrottledRatioRange)
					}
				}
			}
		})
	}
}

func shifted(at []time.Duration, by time.Duration) []time.Duration {
	out := make([]time.Duration, len(at))
	for i, t := range at {
		out[i] = t + by
	}
	return out
}

// TestSliceBound: a group on one CPU gets no slice bound; on several, the
// bound takes (cores-1) slices out of the quota, throttles at least as much
// as the fluid replay, and raises the interval's upper end to it.
func TestSliceBound(t *testing.T) {
	if got := cfs.SliceSlack(30*time.Millisecond, 1); got != 0 {
		t.Errorf("one CPU: slack %s, want 0", got)
	}
	if got := cfs.SliceSlack(30*time.Millisecond, 3); got != 10*time.Millisecond {
		t.Errorf("three CPUs, 30 ms quota: slack %s, want two slices (10ms)", got)
	}
	if got := cfs.SliceSlack(6*time.Millisecond, 4); got != 4500*time.Microsecond {
		t.Errorf("four CPUs, 6 ms quota: slack %s, want 3/4 of the quota (4.5ms)", got)
	}
	one := requests(5, 30*time.Second, 40, 5*time.Millisecond, 0, 0)
	one.Cores = 1
	a, err := Advise(one, Request{}, Sampled{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range a.Evaluations {
		if e.ThrottledRatioSliceBound != nil {
			t.Fatalf("%s: slice bound on a one-CPU group", e.Point())
		}
	}
	// Four threads' worth of requests: 200/s of 5 ms, often overlapping.
	many := requests(5, 30*time.Second, 200, 5*time.Millisecond, 0, 0)
	many.Cores = 4
	a, err = Advise(many, Request{}, Sampled{})
	if err != nil {
		t.Fatal(err)
	}
	more := 0
	for _, e := range a.Evaluations {
		b := e.ThrottledRatioSliceBound
		if b == nil {
			t.Fatalf("%s: no slice bound on a four-CPU group", e.Point())
		}
		if *b < e.ThrottledRatio-1e-9 || e.ThrottledRatioRange[1] < *b-1e-9 {
			t.Errorf("%s: fluid %.3f, bound %.3f, interval %v: want fluid <= bound <= upper end", e.Point(), e.ThrottledRatio, *b, *e.ThrottledRatioRange)
		}
		if *b > e.ThrottledRatio+0.01 {
			more++
		}
	}
	if more == 0 {
		t.Error("the bound never exceeds the fluid replay: the slack is not applied")
	}
}

// TestAnswerFromData: the answer sentence carries the recommendation's own
// numbers.
func TestAnswerFromData(t *testing.T) {
	a, err := Advise(requests(7, 60*time.Second, 20, 5*time.Millisecond, 30*time.Second, 0.4), Request{}, Sampled{})
	if err != nil {
		t.Fatal(err)
	}
	r := a.Recommendation
	s := Answer(a)
	for _, want := range []string{
		"Set the CPU limit to " + formatMilli(r.LimitMilli) + ":",
		fmt.Sprintf("%.3f cores used on average", a.Sampled.MeanCores),
		ShareRange(r.ThrottledRatio, r.ThrottledRatioRange),
		"6 blocks of 10s", "in every block",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("answer %q: want %q", s, want)
		}
	}
}

// TestLevelSpreadNearACliff: demand as regular as a program at a fixed
// rate (37 ms of one thread at the start of every 100 ms) is never
// throttled at 375m and always at 365m; 3% more use (38.1 ms) crosses
// 375m, so its interval must reach the top, and the recommendation must
// leave the 3%.
func TestLevelSpreadNearACliff(t *testing.T) {
	d := cliff(7 * time.Millisecond)
	a, err := Advise(d, Request{Limits: []int64{375}}, Sampled{})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, e := range a.Evaluations {
		if e.LimitMilli == 375 && e.BurstMilli == 0 {
			found = true
			if e.ThrottledRatio > 0.05 {
				t.Errorf("375m: predicted %.3f, want about 0 (37 ms of 37.5)", e.ThrottledRatio)
			}
			if e.ThrottledRatioRange[1] < 0.5 {
				t.Errorf("375m: interval %v: with 3%% more use it throttles every period, want the upper end above 0.5", *e.ThrottledRatioRange)
			}
		}
	}
	if !found {
		t.Fatal("375m not evaluated")
	}
	if r := a.Recommendation; !r.Met || float64(r.LimitMilli) < 370*(1+LevelSpread) {
		t.Errorf("recommended %dm (met %v): want at least %.0fm (the use 3%% higher)", r.LimitMilli, r.Met, 370*(1+LevelSpread))
	}
	if !strings.Contains(a.Recommendation.Basis, "more use") {
		t.Errorf("basis %q does not say the level was taken", a.Recommendation.Basis)
	}
}

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
