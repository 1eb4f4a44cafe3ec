package advise_test

import (
	"math"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cfs/cfstest"
	"github.com/throttlelab/throttlelab/testenv"
)

// TestPhasesByNeed checks phases by need (Options.Phases 0 on a window of
// advise.ByNeedMinPeriods periods or more) against every phase replayed
// (Phases 10): on a stretch of the day generator and on random demand, some
// window takes two phases, and then at every point of the window and of
// every block the throttled share lies within advise.PhaseShareBound of
// the ten phases', and the recommendation (without and with burst) is the
// same. The advice is the same at GOMAXPROCS 1 and 2.
func TestPhasesByNeed(t *testing.T) {
	testenv.Arithmetic(t)
	at, usage := cfstest.Day(360_000) // an hour
	demands := map[string]*advise.Demand{
		"day":      {At: at, Usage: usage},
		"random 0": randomDemand(0, time.Hour, 1),
		"random 1": randomDemand(1, time.Hour, 2),
	}
	for name, d := range demands {
		t.Run(name, func(t *testing.T) {
			ten, err := advise.Advise(d, advise.Request{Options: advise.Options{Phases: 10}}, advise.Sampled{})
			if err != nil {
				t.Fatal(err)
			}
			var got *advise.Advice
			for _, procs := range []int{1, 2} {
				prev := runtime.GOMAXPROCS(procs)
				a, err := advise.Advise(d, advise.Request{}, advise.Sampled{})
				runtime.GOMAXPROCS(prev)
				if err != nil {
					t.Fatal(err)
				}
				if got != nil && !reflect.DeepEqual(a, got) {
					t.Fatalf("GOMAXPROCS %d: the advice differs from GOMAXPROCS 1's", procs)
				}
				got = a
			}
			two := 0
			for i, e := range got.Evaluations {
				if e.Phases == 2 {
					two++
				}
				if diff := math.Abs(e.ThrottledRatio - ten.Evaluations[i].ThrottledRatio); diff >= advise.PhaseShareBound {
					t.Errorf("%s (phases %d): throttled %.5f by need, %.5f at 10 phases", e.Point(), e.Phases, e.ThrottledRatio, ten.Evaluations[i].ThrottledRatio)
				}
				if r, r10 := e.ThrottledRatioRange, ten.Evaluations[i].ThrottledRatioRange; math.Abs(r[0]-r10[0]) >= advise.PhaseShareBound || math.Abs(r[1]-r10[1]) >= advise.PhaseShareBound {
					t.Errorf("%s: interval %v by need, %v at 10 phases", e.Point(), *r, *r10)
				}
			}
			if two == 0 {
				t.Fatal("no evaluation took two phases: the test checks nothing")
			}
			r, r10 := got.Recommendation, ten.Recommendation
			if r.LimitMilli != r10.LimitMilli || r.Met != r10.Met || (r.WithBurst == nil) != (r10.WithBurst == nil) ||
				(r.WithBurst != nil && r.WithBurst.LimitMilli != r10.WithBurst.LimitMilli) {
				t.Errorf("recommendation %s (with burst %v) by need, %s (%v) at 10 phases", r.Point(), r.WithBurst, r10.Point(), r10.WithBurst)
			}
		})
	}
}

// TestPhasesByNeedFallsBack feeds demand whose throttling depends on where
// the period boundary falls: 30 ms of work spread over 60 ms, every 200 ms,
// for 10 minutes (6000 periods of 100 ms). A boundary at the burst's start
// puts all 30 ms in one period, half a period later 25 ms and 5 ms: limits
// between 250m and 300m throttle at one phase and not at the other. Phases
// by need must replay all ten: the advice is every figure the ten phases'.
func TestPhasesByNeedFallsBack(t *testing.T) {
	var at, usage []time.Duration
	var u time.Duration
	for t := time.Duration(0); t <= 10*time.Minute; t += 10 * time.Millisecond {
		if t > 0 && (t-10*time.Millisecond)%(200*time.Millisecond) < 60*time.Millisecond {
			u += 5 * time.Millisecond // half a core over the 10 ms that ended at t
		}
		at, usage = append(at, t), append(usage, u)
	}
	d := &advise.Demand{At: at, Usage: usage}
	req := advise.Request{Limits: []int64{250, 260, 270, 280, 290}}
	got, err := advise.Advise(d, req, advise.Sampled{})
	if err != nil {
		t.Fatal(err)
	}
	req.Phases = 10
	ten, err := advise.Advise(d, req, advise.Sampled{})
	if err != nil {
		t.Fatal(err)
	}
	spread := 0.0
	for _, e := range ten.Evaluations {
		spread = max(spread, e.ThrottledRatioWorst-e.ThrottledRatioBest)
	}
	if spread < 0.1 {
		t.Fatalf("the phases' shares differ by %.3f at most: the demand does not make the phase matter", spread)
	}
	if !reflect.DeepEqual(got, ten) {
		for _, e := range got.Evaluations {
			if e.Phases != 0 {
				t.Errorf("%s: a mean over %d phases, where the phases disagree", e.Point(), e.Phases)
				break
			}
		}
		t.Fatal("the advice differs from the ten phases'")
	}
}

// TestPhasesByNeedPerPoint checks phases by need point by point, in
// Evaluate, against Options.Phases 2 (phases 0 and half a period, the two
// by need replays first) and Phases 10, at Workers 1 and 2, with every
// point replayed in full and with only those with burst replayed (the
// others counted in one pass):
//   - hour 11 of the day generator, where at 330m+330m burst alone the
//     two phases' delay p99s differ by more than PhaseDelayBound while
//     every throttled share agrees: such a point's evaluation is exactly
//     the ten phases', every other point's exactly the two phases' mean;
//   - a burst locked to the period (as in TestPhasesByNeedFallsBack),
//     where shares differ at some points: then every point is exactly the
//     ten phases' (where the boundary falls decides which periods
//     throttle, a point whose two phases happen to agree may still differ
//     at the other eight).
func TestPhasesByNeedPerPoint(t *testing.T) {
	at, usage := cfstest.Day(12*360_000 + 1)
	at, usage = append([]time.Duration(nil), at[11*360_000:]...), usage[11*360_000:]
	for k := range at {
		at[k] -= at[0]
	}
	var lat, lusage []time.Duration
	var u time.Duration
	for t := time.Duration(0); t <= 10*time.Minute; t += 10 * time.Millisecond {
		if t > 0 && (t-10*time.Millisecond)%(200*time.Millisecond) < 60*time.Millisecond {
			u += 5 * time.Millisecond
		}
		lat, lusage = append(lat, t), append(lusage, u)
	}
	cases := []struct {
		name   string
		d      *advise.Demand
		limits []int64
		locked bool
	}{
		{"day hour 11", &advise.Demand{At: at, Usage: usage}, []int64{300, 310, 320, 330, 340, 350, 360, 380, 400}, false},
		{"locked to the period", &advise.Demand{At: lat, Usage: lusage}, []int64{150, 200, 250, 260, 270, 280, 290, 300, 400}, true},
	}
	for _, c := range cases {
		var points []advise.Point
		for _, l := range c.limits {
			points = append(points, advise.Point{LimitMilli: l, Period: 100 * time.Millisecond}, advise.Point{LimitMilli: l, BurstMilli: l, Period: 100 * time.Millisecond})
		}
		fulls := map[string]func(int, advise.Evaluation) bool{
			"every point replayed": nil,
			"burst replayed":       func(i int, _ advise.Evaluation) bool { return points[i].BurstMilli > 0 },
		}
		for fname, full := range fulls {
			t.Run(c.name+", "+fname, func(t *testing.T) {
				two, err := advise.Evaluate(c.d, points, advise.Options{Phases: 2, Full: full})
				if err != nil {
					t.Fatal(err)
				}
				ten, err := advise.Evaluate(c.d, points, advise.Options{Phases: 10, Full: full})
				if err != nil {
					t.Fatal(err)
				}
				for _, workers := range []int{1, 2} {
					got, err := advise.Evaluate(c.d, points, advise.Options{Workers: workers, Full: full})
					if err != nil {
						t.Fatal(err)
					}
					held, back := 0, 0
					for i, e := range got {
						switch e.Phases {
						case 0:
							back++
							if !reflect.DeepEqual(e, ten[i]) {
								t.Errorf("workers %d, %s at every phase: %+v, the ten phases' %+v", workers, e.Point(), e, ten[i])
							}
						case 2:
							held++
							e.Phases = 0
							if !reflect.DeepEqual(e, two[i]) {
								t.Errorf("workers %d, %s at two phases: %+v, phases 0 and 5's %+v", workers, e.Point(), e, two[i])
							}
							if spread := two[i].ThrottledRatioWorst - two[i].ThrottledRatioBest; spread >= advise.PhaseShareBound {
								t.Errorf("workers %d, %s at two phases whose shares differ by %.4f", workers, e.Point(), spread)
							}
						default:
							t.Errorf("%s: phases %d", e.Point(), e.Phases)
						}
					}
					if c.locked && held > 0 {
						t.Errorf("workers %d: %d points at two phases where shares differ at some point", workers, held)
					}
					if !c.locked && (held == 0 || back == 0) {
						t.Fatalf("workers %d: %d points at two phases, %d at ten: the demand does not make some points alone differ", workers, held, back)
					}
				}
			})
		}
	}
}
