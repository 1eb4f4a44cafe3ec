package validation

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
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

// TestProgramTableKnee writes rows with knee ranges and checks the table's
// summary: the old counts kept, the width judged at the 5% points apart,
// the widest range in % of its limit (and where), and a range without an
// upper end counted apart rather than as the widest.
func TestProgramTableKnee(t *testing.T) {
	k := func(share float64, lo, hi int64, open bool) *advise.KneeRange {
		return &advise.KneeRange{Share: share, LowMilli: lo, HighMilli: hi, NoUpperEnd: open}
	}
	rows := []ProgramRow{
		{Program: "a", Knee: 0.5, Limit: "330m", LimitMilli: 330, PredictedLow: 0.2, PredictedHigh: 0.9, InInterval: true, Measured: 0.6, KneeRange: k(0.5, 320, 345, false)},
		{Program: "a", Knee: 0.05, Limit: "370m", LimitMilli: 370, PredictedLow: 0.0, PredictedHigh: 0.1, InInterval: true, KneeRange: k(0.05, 360, 400, false)},
		{Program: "b", Knee: 0.2, Limit: "200m", LimitMilli: 200, PredictedLow: 0.1, PredictedHigh: 0.35, InInterval: false, Measured: 0.3, KneeRange: k(0.2, 190, 195, false)},
		{Program: "b", Knee: 0.05, Limit: "250m", LimitMilli: 250, PredictedLow: 0.0, PredictedHigh: 0.4, InInterval: true, KneeRange: k(0.05, 230, 0, true)},
		{Program: "b", Limit: "300m", LimitMilli: 300, Recommended: true, Measured: 0.01},
	}
	var b strings.Builder
	if err := WriteProgramTable(&b, Env{}, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"**3 of 4 knee points inside the widened interval; 2 of 4 intervals narrower than 0.3; 1 of 1 recommended limits within 5% + 0.05; at the 5% points 1 of 2 intervals narrower than 0.3; the widest knee limit range 10.8% of its limit (a at 5%), 1 without an upper end; 3 of 4 measured shares on the side of the knee's limit range they should be.**",
		"| 320m-345m | 7.6% | yes |",
		"| 190m-195m | 2.5% | **no** |",
		"| 230m-none | - | yes |",
		"(an open loop), a client started for each window after 5 s of load.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestProgramTableLoad checks that the table says how the load ran, from
// the rows: one client through the round, its warm-up and settling.
func TestProgramTableLoad(t *testing.T) {
	rows := []ProgramRow{{Program: "a", Knee: 0.5, Limit: "330m", LimitMilli: 330, WarmupSeconds: 60, SettleSeconds: 5}}
	var b strings.Builder
	if err := WriteProgramTable(&b, Env{RunFor: "1m0s"}, rows); err != nil {
		t.Fatal(err)
	}
	want := "(an open loop), one client for the whole round, without a pause: 1m0s of it before the sampling, 5s under each limit before it was measured. It was sampled without a limit for 1m0s"
	if out := strings.Join(strings.Fields(b.String()), " "); !strings.Contains(out, want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
}

// TestLoadEndsEarly starts a real client that fails at once: waiting under
// it says that it ended, with its own words, rather than measuring a
// window without load.
func TestLoadEndsEarly(t *testing.T) {
	l, err := startLoad(context.Background(), []string{"sh", "-c", "echo no route to the server >&2; exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.stop()
	err = l.wait(context.Background(), time.Hour)
	if err == nil || !strings.Contains(err.Error(), "ended before the round did") || !strings.Contains(err.Error(), "no route to the server") {
		t.Fatalf("wait under a client that ended: %v", err)
	}
	if l.running() == nil {
		t.Error("running() is nil after the client ended")
	}
}

// TestLoadRunsUntilStopped starts a real long client: it runs through a
// wait and a cancelled context's wait says why, and stop ends it.
func TestLoadRunsUntilStopped(t *testing.T) {
	l, err := startLoad(context.Background(), []string{"sleep", "600"})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.wait(context.Background(), 10*time.Millisecond); err != nil {
		t.Fatalf("wait under a running client: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.wait(ctx, time.Hour); err != context.Canceled {
		t.Errorf("wait with a cancelled context: %v, want context.Canceled", err)
	}
	l.stop()
	if l.running() == nil {
		t.Error("running() is nil after stop")
	}
	if _, err := startLoad(context.Background(), []string{"/nonexistent/client"}); err == nil || !strings.Contains(err.Error(), "/nonexistent/client") {
		t.Errorf("starting a missing client: %v", err)
	}
}

// Consecutive windows under one limit are grouped and their spread is
// said; a limit measured once, or another limit, is not folded in.
func TestProgramTableRepeats(t *testing.T) {
	row := func(limit int64, knee float64, rep int, measured, use float64) ProgramRow {
		high := 0.9 // an interval too wide at the steep points, narrow at 5%
		if knee <= WidthShare {
			high = 0.1
		}
		return ProgramRow{Program: "a", Round: 1, Knee: knee, Limit: fmt.Sprintf("%dm", limit), LimitMilli: limit, Repeat: rep, Measured: measured, MeasuredMean: use,
			PredictedHigh: high, InInterval: Within(measured, 0, high)}
	}
	rows := []ProgramRow{
		row(330, 0.5, 1, 0.488, 0.319), row(330, 0.5, 2, 0.893, 0.330), row(330, 0.5, 3, 0.610, 0.322),
		row(340, 0.2, 1, 0.223, 0.319), row(340, 0.2, 2, 0.250, 0.320),
		row(370, 0.05, 1, 0.050, 0.325), row(370, 0.05, 2, 0.900, 0.400),
		row(400, 0, 0, 0.017, 0.325),
	}
	gs := Repeats(rows)
	if len(gs) != 3 {
		t.Fatalf("got %d groups, want 3 (330m, 340m, 370m): %+v", len(gs), gs)
	}
	if g := gs[0]; g.Windows != 3 || g.Low != 0.488 || g.High != 0.893 || g.UseLow != 0.319 || g.UseHigh != 0.330 {
		t.Errorf("330m: %+v", g)
	}
	if g := gs[1]; g.Windows != 2 || g.Spread() > 0.028 || g.Spread() < 0.026 {
		t.Errorf("340m: %+v", g)
	}
	var b strings.Builder
	if err := WriteProgramTable(&b, Env{RunFor: "1m0s"}, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// The widest spread is the 5% point's, but only the 50% and 20% points
	// count against the width.
	for _, want := range []string{
		"moved by up to 0.850 (a at 370m, 0.050..0.900, using 0.325..0.400 cores); at 1 of 2 limits at the 50% and 20% points by more than 0.3",
		"| 330m #2 |", "| 330m |",
		// Each window counts for inside; each limit's interval once.
		"6 of 7 knee windows inside the widened interval; 1 of 3 intervals narrower than 0.3",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "400m #") {
		t.Errorf("a limit measured once got a window number:\n%s", out)
	}
	// Rows without repeats say nothing of them.
	b.Reset()
	if err := WriteProgramTable(&b, Env{}, rows[7:]); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "consecutive windows") {
		t.Errorf("no repeats, but the table speaks of them:\n%s", b.String())
	}
}
