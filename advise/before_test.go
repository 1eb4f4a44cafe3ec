package advise_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/cfs/cfstest"
	"github.com/throttlelab/throttlelab/demand"
	"github.com/throttlelab/throttlelab/testenv"
)

// TestAdviseBefore checks Advise against the path before it
// (AdviseBefore, the benchmarks' reference) on recorded and random demand,
// with a throttling target and with a delay budget, and with one CPU to
// run on and with two: the same advice, every figure alike.
func TestAdviseBefore(t *testing.T) {
	testenv.Arithmetic(t)
	demands := bandDemands(t)
	targets := []advise.Target{{}, {MaxDelay: 2 * time.Millisecond}}
	for name, d := range demands {
		for _, tg := range targets {
			t.Run(fmt.Sprintf("%s %v", name, tg.MaxDelay), func(t *testing.T) {
				req := advise.Request{Target: tg, Periods: []time.Duration{100 * time.Millisecond, 50 * time.Millisecond}}
				ref, err := advise.AdviseBefore(d, req, advise.Sampled{Source: name})
				if err != nil {
					t.Fatal(err)
				}
				for _, procs := range []int{1, 2} {
					prev := runtime.GOMAXPROCS(procs)
					got, err := advise.Advise(d, req, advise.Sampled{Source: name})
					runtime.GOMAXPROCS(prev)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, ref) {
						t.Errorf("GOMAXPROCS %d: the advice differs from the path before", procs)
					}
				}
			})
		}
	}
}

// BenchmarkAdviseCSV24h is advise --csv on a day of 10 ms samples (8.64 M,
// cfstest.Day, written to a file in the benchmark, not committed), read with
// demand.ReadCSV and advised two ways in the same run: Advise, with phases
// by need, and the path before it (AdviseBefore: every phase, the windows
// one at a time, the counts' replays with delays). It reports each one's
// seconds, reading included, their ratio, and how many of the evaluations
// shown are means over two phases; it checks they recommend alike and that
// every throttled share lies within advise.PhaseShareBound of the path
// before's.
func BenchmarkAdviseCSV24h(b *testing.B) {
	at, usage := cfstest.Day(8_640_000)
	path := filepath.Join(b.TempDir(), "day.csv")
	fh, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := demand.WriteCSV(fh, cfs.FromSamples(at, usage)); err != nil {
		b.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		b.Fatal(err)
	}
	at, usage = nil, nil
	run := func(adv func(*advise.Demand, advise.Request, advise.Sampled) (*advise.Advice, error)) (*advise.Advice, time.Duration) {
		runtime.GC() // the other path's garbage is not this one's cost
		start := time.Now()
		fh, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		d, err := demand.ReadCSV(fh)
		fh.Close()
		if err != nil {
			b.Fatal(err)
		}
		a, err := adv(d, advise.Request{}, advise.Sampled{Source: path})
		if err != nil {
			b.Fatal(err)
		}
		return a, time.Since(start)
	}
	var now, before time.Duration
	two := 0
	for range b.N {
		a, t := run(advise.Advise)
		now += t
		ref, t := run(advise.AdviseBefore)
		before += t
		sameAdvice(b, a, ref)
		two = 0
		for _, e := range a.Evaluations {
			if e.Phases > 0 {
				two++
			}
		}
	}
	n := float64(b.N)
	b.ReportMetric(now.Seconds()/n, "s/advise")
	b.ReportMetric(before.Seconds()/n, "s/advise-before")
	b.ReportMetric(float64(before)/float64(now), "before/now")
	b.ReportMetric(float64(two), "evaluations-at-2-phases")
}

// sameAdvice fails unless a recommends what ref does (the limit, whether it
// is met, the burst) and every evaluation's throttled share lies within
// advise.PhaseShareBound of ref's: phases by need against every phase.
func sameAdvice(tb testing.TB, a, ref *advise.Advice) {
	tb.Helper()
	r, rr := a.Recommendation, ref.Recommendation
	if r.LimitMilli != rr.LimitMilli || r.Met != rr.Met || (r.WithBurst == nil) != (rr.WithBurst == nil) ||
		(r.WithBurst != nil && r.WithBurst.LimitMilli != rr.WithBurst.LimitMilli) {
		tb.Fatalf("the recommendation differs from the path before's: %+v, before %+v", r, rr)
	}
	if len(a.Evaluations) != len(ref.Evaluations) {
		tb.Fatalf("%d evaluations, the path before %d", len(a.Evaluations), len(ref.Evaluations))
	}
	for i, e := range a.Evaluations {
		if d := math.Abs(e.ThrottledRatio - ref.Evaluations[i].ThrottledRatio); d >= advise.PhaseShareBound {
			tb.Fatalf("%s: throttled %.5f, the path before %.5f", e.Point(), e.ThrottledRatio, ref.Evaluations[i].ThrottledRatio)
		}
	}
}
