package advise_test

import (
	"os"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/demand"
)

// TestTwoRegimesRecorded is the acceptance test on a recorded demand: a
// real group on this project's 2-CPU test machine (cgroup v1, 2026-11-23)
// holding a quiet worker (one thread busy 5 ms every 50 ms) for 60 s, with a
// background job (two threads busy 30 ms every 150 ms) started at 30 s,
// sampled by advise --cgroup --save-csv. Advice must name the last three
// blocks, give intervals, and recommend above the pooled window's limit.
func TestTwoRegimesRecorded(t *testing.T) {
	fh, err := os.Open("testdata/two-regime.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	d, err := demand.ReadCSV(fh)
	if err != nil {
		t.Fatal(err)
	}
	a, err := advise.Advise(d, advise.Request{}, advise.Sampled{Source: "recorded"})
	if err != nil {
		t.Fatal(err)
	}
	w := a.Window
	if w.Stationary || len(w.Blocks) != 6 {
		t.Fatalf("stationary=%v over %d blocks: want non-stationary over 6", w.Stationary, len(w.Blocks))
	}
	for i, b := range w.Blocks {
		if b.Differs != (i >= 3) {
			t.Errorf("block %d (%.0f-%.0f s, %.3f cores): differs=%v, want %v", i, b.StartSeconds, b.EndSeconds, b.MeanCores, b.Differs, i >= 3)
		}
	}
	if !strings.Contains(w.Nonstationary, "30-40 s (0.") || !strings.Contains(w.Nonstationary, "sample for") {
		t.Errorf("warning %q: want the busy blocks' times and use, and how long to sample", w.Nonstationary)
	}
	r := a.Recommendation
	if !r.Met || r.LimitMilli <= w.WholeWindowLimitMilli || r.ThrottledRatioRange == nil {
		t.Errorf("recommended %dm (met %v, interval %v) against the pooled window's %dm: want an interval and a higher limit",
			r.LimitMilli, r.Met, r.ThrottledRatioRange, w.WholeWindowLimitMilli)
	}
}
