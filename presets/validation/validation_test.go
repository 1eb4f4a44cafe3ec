package validation

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/sim"
)

// TestSimBackend runs every workload through the harness on the simulator
// (whose quota model hands runtime to CPUs in 5 ms slices, which advise's
// fluid replay does not): the specs parse, the rows come back with
// intervals, and each simulated throttled share lies inside advise's
// interval widened by the tolerance. It fails if the harness reads the wrong
// run, the interval excludes the pooled prediction, or advise and the
// simulator part.
func TestSimBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 12 runs")
	}
	for _, w := range Workloads {
		t.Run(w.Name, func(t *testing.T) {
			dir := t.TempDir()
			if err := w.Run(context.Background(), sim.NewBackend(sim.Options{Cores: 2}), dir, 20*time.Second, io.Discard); err != nil {
				t.Fatal(err)
			}
			rows, err := w.Compare(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(w.Limits) {
				t.Fatalf("%d rows, want %d", len(rows), len(w.Limits))
			}
			for _, r := range rows {
				t.Logf("%s %s: predicted %.3f [%.3f, %.3f] (slice bound %.3f), simulated %.3f", r.Workload, r.Limit, r.PredictedRatio, r.PredictedLow, r.PredictedHigh, r.SliceBound, r.MeasuredRatio)
				if r.PredictedLow > r.PredictedRatio || r.PredictedHigh < r.PredictedRatio {
					t.Errorf("%s: interval [%.3f, %.3f] excludes the pooled prediction %.3f", r.Limit, r.PredictedLow, r.PredictedHigh, r.PredictedRatio)
				}
				if r.MeasuredPeriods == 0 {
					t.Errorf("%s: no periods measured: the limit was not applied", r.Limit)
				}
				if !r.InWidenedInterval {
					t.Errorf("%s: simulated %.3f outside [%.3f, %.3f] widened", r.Limit, r.MeasuredRatio, r.PredictedLow, r.PredictedHigh)
				}
			}
			var b strings.Builder
			if err := WriteTable(&b, Env{}, rows); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "| "+w.Name+" | ") {
				t.Errorf("table has no row of %s:\n%s", w.Name, b.String())
			}
		})
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		m, lo, hi float64
		want      bool
	}{
		{0.10, 0.05, 0.08, true},  // 0.08 + 0.07
		{0.16, 0.05, 0.08, false}, // above 0.15
		{0.00, 0.05, 0.08, true},  // 0.05 - 0.07 < 0
		{0.50, 0.60, 0.80, true},  // 0.60 - 0.18 = 0.42
		{0.40, 0.60, 0.80, false},
	} {
		if got := Within(tc.m, tc.lo, tc.hi); got != tc.want {
			t.Errorf("Within(%.2f, %.2f, %.2f) = %v, want %v", tc.m, tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestSplice(t *testing.T) {
	doc := "# advise\n\nhand text\n" + BeginMarker + "old\n" + EndMarker + "after\n"
	if got := Splice(doc, "new\n"); got != "# advise\n\nhand text\n"+BeginMarker+"new\n"+EndMarker+"after\n" {
		t.Errorf("splice:\n%s", got)
	}
}
