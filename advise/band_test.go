package advise_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/demand"
	"github.com/throttlelab/throttlelab/testenv"
)

// randomDemand is span of 10 ms samples, jittered, of bursts on up to cores
// CPUs over a trickle.
func randomDemand(seed uint64, span time.Duration, cores int) *advise.Demand {
	rng := rand.New(rand.NewPCG(seed, 11))
	var at, usage []time.Duration
	var u time.Duration
	for t := time.Duration(0); t <= span; t += 10 * time.Millisecond {
		ts := t
		if t > 0 {
			ts += time.Duration(rng.IntN(1000)) * time.Microsecond
			dt := ts - at[len(at)-1]
			work := time.Duration(rng.IntN(500)) * time.Microsecond
			if rng.Float64() < 0.2 {
				work += time.Duration(rng.Float64() * float64(cores) * float64(dt))
			}
			u += min(work, time.Duration(cores)*dt)
		}
		at, usage = append(at, ts), append(usage, u)
	}
	return &advise.Demand{At: at, Usage: usage}
}

// TestEvaluateBand checks Options.Full against the per-point replay
// (Evaluate without it, the reference): on recorded and random demand, the
// points Full picks are evaluated exactly as before, every other point has
// the same counts and shares and is marked CountsOnly, and without burst
// the throttled share never rises with the limit.
func TestEvaluateBand(t *testing.T) {
	demands := bandDemands(t)
	for name, d := range demands {
		t.Run(name, func(t *testing.T) {
			d = d.Pinned()
			var points []advise.Point
			for _, per := range []time.Duration{100 * time.Millisecond, 50 * time.Millisecond} {
				for _, l := range advise.Grid(d, 25) {
					points = append(points, advise.Point{LimitMilli: l, Period: per}, advise.Point{LimitMilli: l, BurstMilli: l, Period: per})
				}
			}
			ref, err := advise.Evaluate(d, points, advise.Options{})
			if err != nil {
				t.Fatal(err)
			}
			// Replay the points that throttle at most 10% of periods, and
			// every third.
			picked := map[int]bool{}
			got, err := advise.Evaluate(d, points, advise.Options{Full: func(i int, e advise.Evaluation) bool {
				picked[i] = e.ThrottledRatio <= 0.1 || i%3 == 0
				return picked[i]
			}})
			if err != nil {
				t.Fatal(err)
			}
			countsOnly := 0
			for i, e := range got {
				r := ref[i]
				if !e.CountsOnly {
					if e != r {
						t.Errorf("%s replayed: %+v, per-point replay %+v", points[i], e, r)
					}
					continue
				}
				countsOnly++
				if picked[i] {
					t.Errorf("%s: picked for the replay but counts only", points[i])
				}
				if e.Periods != r.Periods || e.ThrottledPeriods != r.ThrottledPeriods || e.ThrottledRatio != r.ThrottledRatio ||
					e.ThrottledRatioWorst != r.ThrottledRatioWorst || e.ThrottledRatioBest != r.ThrottledRatioBest {
					t.Errorf("%s counted: %v/%v periods throttled (worst %v best %v), per-point replay %v/%v (worst %v best %v)",
						points[i], e.ThrottledPeriods, e.Periods, e.ThrottledRatioWorst, e.ThrottledRatioBest, r.ThrottledPeriods, r.Periods, r.ThrottledRatioWorst, r.ThrottledRatioBest)
				}
			}
			if countsOnly == 0 {
				t.Errorf("no point left to counts only: the test checks nothing of them")
			}
			for i := 2; i < len(got); i++ {
				if got[i].BurstMilli == 0 && got[i].PeriodUsec == got[i-2].PeriodUsec && got[i].ThrottledRatio > got[i-2].ThrottledRatio {
					t.Errorf("%s throttles %.4f, more than %s below it (%.4f)", points[i], got[i].ThrottledRatio, points[i-2], got[i-2].ThrottledRatio)
				}
			}
		})
	}
}

// TestAdviseBand checks Advise's default (the band replayed in full, the
// rest counted) against AllDelays (every point replayed, today's path) on
// recorded and random demand, with a throttling target and with a delay
// budget: the same recommendation, window and baselines; every point
// replayed is the same evaluation, and every point counted has the same
// counts, shares and throttled-share interval; the rows the text shows
// are replayed.
func TestAdviseBand(t *testing.T) {
	testenv.Arithmetic(t)
	demands := bandDemands(t)
	targets := []advise.Target{{}, {MaxThrottled: 0.01}, {MaxDelay: 2 * time.Millisecond}, {MaxThrottled: 0.2, MaxDelay: 20 * time.Millisecond}}
	for name, d := range demands {
		for _, tg := range targets {
			t.Run(fmt.Sprintf("%s %v %v", name, tg.MaxThrottled, tg.MaxDelay), func(t *testing.T) {
				req := advise.Request{Target: tg, Periods: []time.Duration{100 * time.Millisecond, 50 * time.Millisecond}}
				got, err := advise.Advise(d, req, advise.Sampled{Source: name})
				if err != nil {
					t.Fatal(err)
				}
				req.AllDelays = true
				ref, err := advise.Advise(d, req, advise.Sampled{Source: name})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got.Recommendation, ref.Recommendation) {
					t.Errorf("recommendation %+v, every point replayed %+v", got.Recommendation, ref.Recommendation)
				}
				if !reflect.DeepEqual(got.Window, ref.Window) || !reflect.DeepEqual(got.Warnings, ref.Warnings) {
					t.Errorf("window or warnings differ from every point replayed")
				}
				for i, b := range got.Baselines {
					r := ref.Baselines[i]
					if b.Name != r.Name || (b.Evaluation == nil) != (r.Evaluation == nil) ||
						(b.Evaluation != nil && (b.Point() != r.Point() || b.ThrottledRatio != r.ThrottledRatio)) {
						t.Errorf("baseline %+v, every point replayed %+v", b, r)
					}
				}
				counted := 0
				for i, e := range got.Evaluations {
					r := ref.Evaluations[i]
					if !e.CountsOnly {
						if !reflect.DeepEqual(e, r) {
							t.Errorf("%s replayed: %+v, every point replayed %+v", e.Point(), e, r)
						}
						continue
					}
					counted++
					if e.Periods != r.Periods || e.ThrottledPeriods != r.ThrottledPeriods || e.ThrottledRatio != r.ThrottledRatio ||
						e.ThrottledRatioWorst != r.ThrottledRatioWorst || e.ThrottledRatioBest != r.ThrottledRatioBest ||
						*e.ThrottledRatioRange != *r.ThrottledRatioRange || e.DelayP99MsRange != nil {
						t.Errorf("%s counted: %+v, every point replayed %+v", e.Point(), e, r)
					}
				}
				if counted == 0 {
					t.Logf("no point only counted")
				}
				var text strings.Builder
				if err := advise.WriteText(&text, got); err != nil {
					t.Fatal(err)
				}
				var refText strings.Builder
				if err := advise.WriteText(&refText, ref); err != nil {
					t.Fatal(err)
				}
				if text, refText := baselinesCut(text.String()), baselinesCut(refText.String()); text != refText {
					t.Errorf("the text differs from every point replayed:\n%s\nevery point replayed:\n%s", text, refText)
				}
			})
		}
	}
}

// baselinesCut is an advice's text without its baselines' table, whose
// delays are given only for limits in the band.
func baselinesCut(text string) string {
	head, _, _ := strings.Cut(text, "What coarse recommenders would set")
	return head
}

// bandDemands is the demand the band tests run on: the recorded two-regime
// fixture and four seeded random demands on one and two CPUs.
func bandDemands(t *testing.T) map[string]*advise.Demand {
	t.Helper()
	fh, err := os.Open("testdata/two-regime.csv")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := demand.ReadCSV(fh)
	fh.Close()
	if err != nil {
		t.Fatal(err)
	}
	demands := map[string]*advise.Demand{"recorded two-regime": rec}
	for seed := range uint64(4) {
		demands["random "+strconv.FormatUint(seed, 10)] = randomDemand(seed, 90*time.Second, 1+int(seed%2))
	}
	return demands
}
