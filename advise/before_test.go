package advise_test

import (
	"fmt"
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
)

// TestAdviseBefore checks Advise against the path before it
// (AdviseBefore, the benchmarks' reference) on recorded and random demand,
// with a throttling target and with a delay budget, and with one CPU to
// run on and with two: the same advice, every figure alike.
func TestAdviseBefore(t *testing.T) {
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
// demand.ReadCSV and advised two ways in the same run: Advise, and the path
// before it (AdviseBefore). It reports each one's seconds, reading
// included, and their ratio, and checks they advise alike (every figure).
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
	for range b.N {
		a, t := run(advise.Advise)
		now += t
		ref, t := run(advise.AdviseBefore)
		before += t
		if !reflect.DeepEqual(a, ref) {
			b.Fatalf("the advice differs from the path before's: recommendation %+v, before %+v", a.Recommendation, ref.Recommendation)
		}
	}
	n := float64(b.N)
	b.ReportMetric(now.Seconds()/n, "s/advise")
	b.ReportMetric(before.Seconds()/n, "s/advise-before")
	b.ReportMetric(float64(before)/float64(now), "before/now")
}
