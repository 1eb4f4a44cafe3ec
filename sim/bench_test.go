package sim

import (
	"context"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/runner"
)

// BenchmarkLogJam simulates the full-scale log jam experiment (16 cores, 8
// workers, all 26010 tiles, 2 configs x 5 repeats) and reports events per
// second, simulated seconds per wall second, and the cost per event against
// a reference in the same run: the same number of events pushed through and
// popped from the bare event queue.
func BenchmarkLogJam(b *testing.B) {
	e, err := experiment.LoadFile("testdata/logjam.yaml")
	if err != nil {
		b.Fatal(err)
	}
	var info *Info
	var simWall time.Duration
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		start := time.Now()
		be := NewBackend(Options{Cores: 16})
		_, err = runner.Run(context.Background(), e, be, runner.Options{Dir: dir})
		info = be.Info()
		simWall += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
	}
	per := simWall / time.Duration(b.N)
	// The reference: the bare queue, same number of events, in a steady heap
	// of 64 pending events.
	var q queue
	h := balanceTick{}
	for i := 0; i < 64; i++ {
		q.push(time.Duration(i), h, 0)
	}
	start := time.Now()
	for i := uint64(0); i < info.Events; i++ {
		e := q.pop()
		q.push(e.at+time.Duration(i%97+1), h, 0)
	}
	ref := time.Since(start)
	b.ReportMetric(per.Seconds(), "s/experiment")
	b.ReportMetric(float64(info.Events)/per.Seconds()/1e6, "Mevents/s")
	b.ReportMetric(info.SimulatedSec/per.Seconds(), "sim-s/wall-s")
	b.ReportMetric(float64(per)/float64(ref), "x-bare-queue")
}
