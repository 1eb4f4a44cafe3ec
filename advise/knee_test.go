package advise

import (
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
)

// TestKneeOfEnds reads the knee off a ladder whose intervals are given, in
// no order, with a burst row and a row of another period that must be
// left out: each end is the lowest limit whose low (high) end is at most
// the share, so a swapped pair of ends, a row off by one or a row of the
// wrong kind fails it.
func TestKneeOfEnds(t *testing.T) {
	per := 100 * time.Millisecond
	row := func(l int64, lo, hi float64) Evaluation {
		return Evaluation{LimitMilli: l, PeriodUsec: 100_000, ThrottledRatio: (lo + hi) / 2, ThrottledRatioRange: &Range{lo, hi}}
	}
	evs := []Evaluation{
		row(140, 0.04, 0.25), row(100, 0.6, 0.9), row(120, 0.3, 0.55), row(110, 0.45, 0.8),
		row(170, 0, 0.04), row(130, 0.15, 0.48), row(160, 0, 0.06), row(150, 0, 0.19),
		{LimitMilli: 105, BurstMilli: 105, PeriodUsec: 100_000, ThrottledRatioRange: &Range{0, 0}}, // burst: not the knee's
		{LimitMilli: 115, PeriodUsec: 50_000, ThrottledRatioRange: &Range{0, 0}},                   // another period
	}
	for _, tc := range []struct {
		target float64
		want   []KneeRange
	}{
		{0.05, []KneeRange{
			{Share: 0.5, LowMilli: 110, HighMilli: 130, StepMilli: 10},
			{Share: 0.2, LowMilli: 130, HighMilli: 150, StepMilli: 10},
			{Share: 0.05, Target: true, LowMilli: 140, HighMilli: 170, StepMilli: 10},
		}},
		{0.1, []KneeRange{
			{Share: 0.5, LowMilli: 110, HighMilli: 130, StepMilli: 10},
			{Share: 0.2, LowMilli: 130, HighMilli: 150, StepMilli: 10},
			{Share: 0.1, Target: true, LowMilli: 140, HighMilli: 160, StepMilli: 10},
			{Share: 0.05, LowMilli: 140, HighMilli: 170, StepMilli: 10},
		}},
		// The optimistic end at the lowest limit evaluated.
		{0.7, []KneeRange{
			{Share: 0.7, Target: true, LowMilli: 100, LowAtLowest: true, HighMilli: 120, StepMilli: 10},
			{Share: 0.5, LowMilli: 110, HighMilli: 130, StepMilli: 10},
			{Share: 0.2, LowMilli: 130, HighMilli: 150, StepMilli: 10},
			{Share: 0.05, LowMilli: 140, HighMilli: 170, StepMilli: 10},
		}},
		// No high end gets to 1%.
		{0.01, []KneeRange{
			{Share: 0.5, LowMilli: 110, HighMilli: 130, StepMilli: 10},
			{Share: 0.2, LowMilli: 130, HighMilli: 150, StepMilli: 10},
			{Share: 0.05, LowMilli: 140, HighMilli: 170, StepMilli: 10},
			{Share: 0.01, Target: true, LowMilli: 150, NoUpperEnd: true, StepMilli: 10},
		}},
		// A delay budget alone: no share of its own.
		{1, []KneeRange{
			{Share: 0.5, LowMilli: 110, HighMilli: 130, StepMilli: 10},
			{Share: 0.2, LowMilli: 130, HighMilli: 150, StepMilli: 10},
			{Share: 0.05, LowMilli: 140, HighMilli: 170, StepMilli: 10},
		}},
	} {
		got := kneeOf(evs, Target{MaxThrottled: tc.target}, per)
		if len(got) != len(tc.want) {
			t.Fatalf("target %.2f: %+v, want %+v", tc.target, got, tc.want)
		}
		for i, w := range tc.want {
			w.UpToMilli = 170
			if got[i] != w {
				t.Errorf("target %.2f, share %.2f: %+v, want %+v", tc.target, w.Share, got[i], w)
			}
		}
	}
	// Without intervals (the agent's unaudited ladder) both ends are the
	// point estimate's crossing.
	plain := []Evaluation{{LimitMilli: 100, PeriodUsec: 100_000, ThrottledRatio: 0.6}, {LimitMilli: 125, PeriodUsec: 100_000, ThrottledRatio: 0.3}, {LimitMilli: 150, PeriodUsec: 100_000, ThrottledRatio: 0.1}}
	if got := kneeOf(plain, Target{MaxThrottled: 0.05}, per); got[1] != (KneeRange{Share: 0.2, LowMilli: 150, HighMilli: 150, UpToMilli: 150, StepMilli: 25}) {
		t.Errorf("point estimates at 20%%: %+v, want 150m-150m", got[1])
	}
	// Never down to the share: no end at all.
	if got := kneeOf(plain, Target{MaxThrottled: 0.05}, per); got[2].LowMilli != 0 || !got[2].NoUpperEnd {
		t.Errorf("point estimates at 5%%: %+v, want no end", got[2])
	}
}

func TestKneeStep(t *testing.T) {
	for m, want := range map[int64]int64{50: 1, 100: 1, 101: 2, 350: 5, 500: 5, 501: 10, 1200: 20, 4000: 50} {
		if got := kneeStep(m); got != want {
			t.Errorf("kneeStep(%d) = %d, want %d", m, got, want)
		}
	}
}

// TestKneeRefined advises a cliff: 37 ms of work at the start of every
// 100 ms, so a limit throttles every period below 370m and none from it
// on, and the interval's ends cross at 370m times the level's low and high
// factors (the window replayed with less and more use). The grid's limits
// lie about 15m apart there; the knee must be refined between them to
// within kneeStep, each end the first limit at or above its crossing, and
// the grid (and so the recommendation) left as it was.
func TestKneeRefined(t *testing.T) {
	d := cliff(7 * time.Millisecond)
	a, err := Advise(d, Request{}, Sampled{})
	if err != nil {
		t.Fatal(err)
	}
	lv := movesOf(d.Pinned())
	cross := [2]float64{370 * lv.Low, 370 * lv.High}
	if len(a.Knee) != 3 {
		t.Fatalf("knee %+v: want 50%%, 20%%, 5%%", a.Knee)
	}
	for _, k := range a.Knee {
		if k.StepMilli <= 0 || k.StepMilli > kneeStep(k.HighMilli) {
			t.Errorf("%.0f%%: step %dm, want refined to at most %dm", 100*k.Share, k.StepMilli, kneeStep(k.HighMilli))
		}
		for end, m := range [2]int64{k.LowMilli, k.HighMilli} {
			if float64(m) < cross[end] || float64(m-k.StepMilli) >= cross[end] {
				t.Errorf("%.0f%%: end %d at %dm (step %dm), want the first limit at or above %.1fm", 100*k.Share, end, m, k.StepMilli, cross[end])
			}
		}
	}
	if !a.Knee[2].Target || a.Knee[2].Share != 0.05 {
		t.Errorf("the 5%% entry %+v is not marked the target", a.Knee[2])
	}
	allowed := map[int64]bool{}
	for _, l := range Grid(d.Pinned(), 25) {
		allowed[l] = true
	}
	for _, b := range a.Baselines {
		if b.Evaluation != nil {
			allowed[b.LimitMilli] = true
		}
	}
	for _, e := range a.Evaluations {
		if !allowed[e.LimitMilli] {
			t.Errorf("evaluation at %dm: neither the grid's nor a baseline's (a knee limit entered the grid)", e.LimitMilli)
		}
	}
	if r := a.Recommendation; !r.Met || float64(r.LimitMilli) < cross[1] {
		t.Errorf("recommended %dm: want met, at least %.0fm", r.LimitMilli, cross[1])
	}
	text := KneeText(a)
	if !strings.HasPrefix(text, "the knee: 50% throttled at ") || !strings.Contains(text, "5% (the target) at ") {
		t.Errorf("knee text %q", text)
	}
	if k := a.Knee[0]; k.HighMilli <= k.LowMilli || float64(k.HighMilli-k.LowMilli) > 0.1*float64(k.HighMilli) {
		t.Errorf("50%%: %dm-%dm: want the level's 6%% or so", k.LowMilli, k.HighMilli)
	}
}

// cliff is 30 s of 10 ms samples of a burst every 100 ms: three samples
// of 10 ms and one of tail, then nothing (a cliff: throttled in every
// period below the burst's sum, never above it).
func cliff(tail time.Duration) *Demand {
	var at, usage []time.Duration
	var used time.Duration
	for k := 0; k <= 3000; k++ {
		at = append(at, time.Duration(k)*10*time.Millisecond)
		usage = append(usage, used)
		switch k % 10 {
		case 0, 1, 2:
			used += 10 * time.Millisecond
		case 3:
			used += tail
		}
	}
	return cfs.FromSamples(at, usage)
}

// TestKneeOffTheGridBeyondTheSpan: a window longer than KneeRefineSpan
// (shortened here to 10 s against the 30 s cliff of TestKneeRefined) has
// its knee read off the grid: every end is a limit the advice evaluated,
// and the step says how far apart they lie there.
func TestKneeOffTheGridBeyondTheSpan(t *testing.T) {
	a, err := Advise(cliff(0), Request{Options: Options{kneeSpan: 10 * time.Second}}, Sampled{})
	if err != nil {
		t.Fatal(err)
	}
	evaluated := map[int64]bool{}
	for _, e := range a.Evaluations {
		if e.BurstMilli == 0 {
			evaluated[e.LimitMilli] = true
		}
	}
	if len(a.Knee) == 0 {
		t.Fatal("no knee")
	}
	refined := false
	for _, k := range a.Knee {
		for _, m := range [2]int64{k.LowMilli, k.HighMilli} {
			if m != 0 && !evaluated[m] {
				t.Errorf("%.0f%%: end %dm is no limit of the grid", 100*k.Share, m)
			}
		}
		refined = refined || (k.StepMilli > 0 && k.StepMilli <= kneeStep(k.HighMilli))
	}
	if refined {
		t.Errorf("knee %+v: a step refined to 1%% beyond the span", a.Knee)
	}
}

func TestKneeText(t *testing.T) {
	a := &Advice{Knee: []KneeRange{
		{Share: 0.5, LowMilli: 320, LowAtLowest: true, HighMilli: 345, UpToMilli: 2000, StepMilli: 5},
		{Share: 0.05, Target: true, LowMilli: 400, NoUpperEnd: true, UpToMilli: 2000, StepMilli: 5},
		{Share: 0.01, NoUpperEnd: true, UpToMilli: 2000},
	}}
	want := "the knee: 50% throttled at <=320m-345m, 5% (the target) at 400m-none (the interval's high end stays above 5% up to 2), 1% above every limit evaluated (up to 2)"
	if got := KneeText(a); !strings.HasPrefix(got, want) {
		t.Errorf("got  %q\nwant %q...", got, want)
	}
	// Both ends at one limit: that limit, not "10m-10m".
	a = &Advice{Knee: []KneeRange{
		{Share: 0.5, LowMilli: 10, LowAtLowest: true, HighMilli: 10, UpToMilli: 2000, StepMilli: 1},
		{Share: 0.2, LowMilli: 300, HighMilli: 300, UpToMilli: 2000, StepMilli: 5},
	}}
	want = "the knee: 50% throttled at <=10m, 20% at 300m ("
	if got := KneeText(a); !strings.HasPrefix(got, want) {
		t.Errorf("got  %q\nwant %q...", got, want)
	}
}
