package settle

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/stats"
)

// judging is how a simulated sequence judges: the rule's level or a plain
// 95% one, with the small-sample widening (Widen, and pilot looks that
// judge nothing) or without, and the requests in each simulated run.
type judging struct {
	first    int
	level    float64
	widen    bool
	requests int
	// paired judges on RepeatInterval of the per-repeat ratios instead
	// of the bootstrap.
	paired bool
}

// trial runs one sequence of looks on simulated repeats of two configs
// whose true mean ratio is truth, judging "ratio >= thr" on the same
// hierarchical-bootstrap intervals the verdicts use. It returns the
// outcome it stopped at (1 reproduced, -1 not reproduced, 0 inconclusive)
// and the repeats it took.
func trial(t *testing.T, r Rule, j judging, seed uint64, truth, thr float64) (int, int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	// Each repeat is a run of each config: a run-to-run offset (5%) and
	// j.requests requests with a spread of 30% of the mean. With 400
	// requests the offset dominates, the worst case for few repeats.
	run := func(mu float64) *stats.Sample {
		m := mu * (1 + 0.05*rng.NormFloat64())
		v := make([]float64, j.requests)
		mean := 0.0
		for i := range v {
			v[i] = m * (1 + 0.3*rng.NormFloat64())
			mean += v[i] / float64(len(v))
		}
		if j.paired {
			// The per-repeat figure is all RepeatInterval reads.
			return stats.NewSample([]float64{mean})
		}
		return stats.NewSample(v)
	}
	schedule := r.Schedule(j.first, 80)
	if !j.widen && !j.paired {
		// Without the widening every look judges, the pilot too.
		schedule = slices.Concat([]int{j.first}, r.Schedule(j.first+1, 80))[:min(r.MaxLooks, len(schedule))]
	}
	var a, b []*stats.Sample
	var looks []Look
	for {
		want := schedule[len(looks)]
		for len(a) < want {
			a, b = append(a, run(truth)), append(b, run(1))
		}
		ma, mb, per := make([]float64, len(a)), make([]float64, len(b)), make([]float64, len(a))
		for i := range a {
			ma[i], mb[i] = a[i].Mean, b[i].Mean
			per[i] = ma[i] / mb[i]
		}
		point := stats.Median(ma) / stats.Median(mb)
		pilot := (j.widen || j.paired) && want < MinJudge
		var iv stats.Interval
		if j.paired {
			if !pilot {
				iv, _ = RepeatInterval(per, point, j.level)
			}
		} else {
			d := stats.Resample([][]*stats.Sample{a, b}, stats.Mean, stats.Resamples, stats.BootstrapSeed)
			var ok bool
			if iv, ok = Interval(stats.Ratio(d[0], d[1]), point, j.level); !ok {
				t.Fatal("no interval")
			}
			if j.widen {
				iv = Widen(iv, point, want, j.level)
			}
		}
		out, l := judgeLook(want, iv, !pilot, thr)
		looks = append(looks, l)
		if dec := r.Decide(looks, schedule, time.Hour); dec.Stop {
			return out, want
		}
	}
}

// judgeLook is the look at want repeats of a condition "value >= thr"
// judged on iv (judged false: a pilot, or no interval, which judges
// nothing): its outcome (1, -1, 0) and the Look, whose open condition's
// width is the interval's, or infinite when not judged.
func judgeLook(want int, iv stats.Interval, judged bool, thr float64) (int, Look) {
	out := 0
	switch {
	case !judged:
	case iv[0] >= thr:
		out = 1
	case iv[1] < thr:
		out = -1
	}
	l := Look{Repeats: want, Took: time.Second, Added: want}
	if out == 0 {
		l.Open = map[int]float64{0: math.Inf(1)}
		if judged {
			l.Open[0] = iv[1] - iv[0]
		}
	}
	return out, l
}

// rates runs n trials and returns the share of them that ended
// reproduced and not reproduced, and the mean repeats.
func rates(t *testing.T, r Rule, j judging, n int, truth, thr float64) (rep, not, reps float64) {
	for i := range n {
		out, k := trial(t, r, j, uint64(1000+i), truth, thr)
		switch out {
		case 1:
			rep++
		case -1:
			not++
		}
		reps += float64(k)
	}
	return rep / float64(n), not / float64(n), reps / float64(n)
}

// bonferroni is the rule before Default: 8 looks, each at 1 - 5%/8 =
// 99.375%, the repeats growing by half; the test measures Default against
// it in the same run.
var bonferroni = Rule{Alpha: 0.05, MaxLooks: 8, Growth: 1.5, Shrink: 0.9}

// TestFalseVerdictRate feeds the rule simulated repeats with no effect
// beyond the threshold (the true ratio on it: every conclusive verdict is
// false, the worst case) and with a known effect, from a pilot look at one
// repeat (the quick variants' own), run-to-run variation larger than the
// within-run one. Judged as the verdicts judge a condition with per-repeat
// values (RepeatInterval), it checks the stated rate holds and that the
// rule is not needlessly conservative: it uses at least half the stated
// rate, more than the Bonferroni rule it replaced, and settles a known
// effect in fewer repeats. Judged on the bootstrap widened by Widen (the
// fallback for conditions without per-repeat values) the rate holds too.
// It also shows why the fallback needs Widen: without it, at the rule's
// own level, looks at few repeats give more false verdicts than stated.
func TestFalseVerdictRate(t *testing.T) {
	if testing.Short() {
		t.Skip("many trials")
	}
	r := Default
	const n = 4000
	// The estimate's own noise over n trials: allow two standard errors
	// above the stated rate.
	limit := r.Alpha + 2*math.Sqrt(r.Alpha*(1-r.Alpha)/n)
	j := judging{first: 1, level: r.Level(), paired: true, requests: 100}
	rep, not, reps := rates(t, r, j, n, 1.1, 1.1)
	t.Logf("Default, per-repeat t intervals, no effect: %.4f false verdicts (%.4f reproduced, %.4f not) over %d trials, %.2f repeats on average; stated at most %.3f", rep+not, rep, not, n, reps, r.Alpha)
	if rep+not > limit || rep+not < r.Alpha/2 {
		t.Errorf("false-verdict rate %.4f over %d trials, stated at most %.3f and wanted above %.3f (not needlessly conservative)", rep+not, n, r.Alpha, r.Alpha/2)
	}
	lj := judging{first: 1, level: Long.Level(), paired: true, requests: 100}
	lRep, lNot, lReps := rates(t, Long, lj, n, 1.1, 1.1)
	lPow, lWrong, lPreps := rates(t, Long, lj, 1000, 1.25, 1.1)
	t.Logf("Long, per-repeat t intervals: no effect %.4f false verdicts, %.2f repeats on average; known effect %.3f reproduced, %.3f not, %.2f repeats on average", lRep+lNot, lReps, lPow, lWrong, lPreps)
	if lRep+lNot > limit || lRep+lNot < r.Alpha/2 || lPow < 0.95 {
		t.Errorf("Long: false-verdict rate %.4f (stated at most %.3f, wanted above %.3f), known effect reproduced %.3f (want 0.95 or more)", lRep+lNot, r.Alpha, r.Alpha/2, lPow)
	}
	old := judging{first: 1, level: bonferroni.Level(), paired: true, requests: 100}
	oRep, oNot, oReps := rates(t, bonferroni, old, n, 1.1, 1.1)
	t.Logf("Bonferroni over 8 looks, per-repeat t intervals, no effect: %.4f false verdicts, %.2f repeats on average", oRep+oNot, oReps)
	if rep+not <= oRep+oNot {
		t.Errorf("Default gave %.4f false verdicts, no more than Bonferroni's %.4f: it uses no more of the stated rate", rep+not, oRep+oNot)
	}
	const m = 1000
	pow, wrong, preps := rates(t, r, j, m, 1.25, 1.1)
	oPow, _, oPreps := rates(t, bonferroni, old, m, 1.25, 1.1)
	t.Logf("known effect (1.25 against 1.1): Default %.3f reproduced, %.3f not, %.2f repeats on average; Bonferroni %.3f reproduced, %.2f repeats on average", pow, wrong, preps, oPow, oPreps)
	if pow < 0.8 || wrong > r.Alpha {
		t.Errorf("known effect: reproduced %.3f (want 0.8 or more), not reproduced %.3f (want at most %.3f)", pow, wrong, r.Alpha)
	}
	if preps >= oPreps {
		t.Errorf("known effect: Default took %.2f repeats on average, Bonferroni %.2f: no cheaper", preps, oPreps)
	}
	// The fallback: the hierarchical bootstrap widened by Widen.
	const k = 100
	boot := judging{first: 1, level: r.Level(), widen: true, requests: 50}
	bRep, bNot, _ := rates(t, r, boot, k, 1.1, 1.1)
	t.Logf("Default, bootstrap widened by Widen, no effect: %.4f false verdicts over %d trials", bRep+bNot, k)
	if bRep+bNot > r.Alpha+2*math.Sqrt(r.Alpha*(1-r.Alpha)/k) {
		t.Errorf("bootstrap widened: false-verdict rate %.4f over %d trials, stated at most %.3f", bRep+bNot, k, r.Alpha)
	}
	bare := judging{first: 3, level: r.Level(), requests: 50}
	wRep, wNot, _ := rates(t, r, bare, k, 1.1, 1.1)
	t.Logf("bootstrap at the rule's level without Widen, first look at 3: %.3f false verdicts", wRep+wNot)
	if wRep+wNot <= bRep+bNot {
		t.Errorf("without Widen the rule gave %.3f false verdicts, no more than the %.3f with it: the test cannot show what Widen is for", wRep+wNot, bRep+bNot)
	}
}

func TestSchedule(t *testing.T) {
	for _, c := range []struct {
		first, most int
		want        []int
	}{
		{3, 60, []int{3, 5, 8}},
		// A pilot look at the spec's one or two repeats, then three
		// judging looks from MinJudge.
		{1, 100, []int{1, 3, 5, 8}},
		{2, 100, []int{2, 3, 5, 8}},
		{4, 100, []int{4, 7, 12}},
		{1, 4, []int{1, 3, 4}},
		{1, 1, []int{1}},
	} {
		if got := Default.Schedule(c.first, c.most); !slices.Equal(got, c.want) {
			t.Errorf("Schedule(%d, %d) = %v, want %v", c.first, c.most, got, c.want)
		}
	}
}

func TestWiden(t *testing.T) {
	for _, c := range []struct{ p, df, want float64 }{{0.975, 1, 12.706}, {0.975, 2, 4.303}, {0.975, 4, 2.776}, {0.995, 9, 3.250}} {
		if got := studentQuantile(c.p, c.df); math.Abs(got-c.want) > 0.002 {
			t.Errorf("t quantile %v with %v degrees of freedom = %.4f, want %.3f", c.p, c.df, got, c.want)
		}
	}
	iv := Widen(stats.Interval{0.9, 1.2}, 1, 3, 0.95)
	// sqrt(3/2) * 4.303 / 1.960 = 2.689
	if math.Abs(iv[0]-(1-0.2689)) > 0.001 || math.Abs(iv[1]-(1+0.5378)) > 0.002 {
		t.Errorf("Widen([0.9, 1.2], 1, 3 repeats, 95%%) = %v, want about [0.731, 1.538]", iv)
	}
	if got := Widen(stats.Interval{0.9, 1.2}, 1, 1, 0.95); got != (stats.Interval{0.9, 1.2}) {
		t.Errorf("Widen at one repeat = %v, want it unchanged", got)
	}
}

func TestDecide(t *testing.T) {
	r := Default
	sch := []int{3, 5, 8, 12}
	pilot := []int{1, 3, 5}
	open := func(w float64) map[int]float64 { return map[int]float64{0: w} }
	s := time.Second
	for _, c := range []struct {
		name   string
		looks  []Look
		budget time.Duration
		want   Decision
	}{
		{"settled", []Look{{Repeats: 3, Took: 3 * s, Added: 3}}, time.Hour, Decision{Stop: true, Reason: Settled}},
		{"next look", []Look{{Repeats: 3, Open: open(1), Took: 3 * s, Added: 3}}, time.Hour, Decision{Next: 5}},
		// 3 s spent, 2 more repeats at 1 s each: 5 s, over a 4 s budget.
		{"budget", []Look{{Repeats: 3, Open: open(1), Took: 3 * s, Added: 3}}, 4 * s, Decision{Stop: true, Reason: Budget}},
		// A pilot at one repeat goes on to the first judging look
		// whatever the budget.
		{"pilot goes on", []Look{{Repeats: 1, Open: open(math.Inf(1)), Took: 3 * s, Added: 1}}, time.Second, Decision{Next: 3}},
		{"just fits", []Look{{Repeats: 3, Open: open(1), Took: 3 * s, Added: 3}}, 5 * s, Decision{Next: 5}},
		// 9 s spent, 3 more repeats at the slowest, 3 s each: 18 s.
		{"slowest repeat predicts", []Look{{Repeats: 3, Open: open(1), Took: 3 * s, Added: 3}, {Repeats: 5, Open: open(0.8), Took: 6 * s, Added: 2}}, 17 * s, Decision{Stop: true, Reason: Budget}},
		{"stalled", []Look{{Repeats: 3, Open: open(1)}, {Repeats: 5, Open: open(0.9)}, {Repeats: 8, Open: open(0.95)}}, time.Hour, Decision{Stop: true, Reason: Stalled}},
		{"shrinking", []Look{{Repeats: 3, Open: open(1)}, {Repeats: 5, Open: open(0.9)}, {Repeats: 8, Open: open(0.7)}}, time.Hour, Decision{Next: 12}},
		{"newly open is not stalled", []Look{{Repeats: 3}, {Repeats: 5, Open: open(0.9)}, {Repeats: 8, Open: open(0.95)}}, time.Hour, Decision{Next: 12}},
		{"last look", []Look{{Repeats: 3, Open: open(1)}, {Repeats: 5, Open: open(0.5)}, {Repeats: 8, Open: open(0.3)}, {Repeats: 12, Open: open(0.2)}}, time.Hour, Decision{Stop: true, Reason: LastLook}},
	} {
		on := sch
		if c.looks[0].Repeats < MinJudge {
			on = pilot
		}
		if got := r.Decide(c.looks, on, c.budget); got != c.want {
			t.Errorf("%s: Decide = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestIntervalLevel(t *testing.T) {
	d := make([]float64, 1000)
	for i := range d {
		d[i] = float64(i + 1)
	}
	iv95, _ := Interval(d, 500, 0.95)
	if iv95 != (stats.Interval{25, 975}) {
		t.Errorf("95%% interval of 1..1000 = %v, want [25, 975] (stats.PercentileInterval's)", iv95)
	}
	if p, _ := stats.PercentileInterval(d, 500); p != iv95 {
		t.Errorf("Interval at 0.95 = %v, stats.PercentileInterval = %v: they must agree", iv95, p)
	}
	iv, _ := Interval(d, 500, Default.Level())
	if !(iv[0] < iv95[0] && iv[1] > iv95[1]) {
		t.Errorf("interval at %v = %v, not wider than the 95%% one %v", Default.Level(), iv, iv95)
	}
	if _, ok := Interval([]float64{math.NaN()}, 1, 0.95); ok {
		t.Error("an interval from no draws")
	}
}

func TestWords(t *testing.T) {
	if got := Words(Settled, 4); got != "settled after 4 repeats" {
		t.Errorf("Words(Settled, 4) = %q", got)
	}
	if got := Words(Budget, 6); got != "budget spent after 6 repeats: still inconclusive" {
		t.Errorf("Words(Budget, 6) = %q", got)
	}
}

// TestRepeatsNeeded: F4's p99 ratio of the 2026-11-29 09:19 run on the
// log scale (1.23 judged on [0.907, 1.67] at 3 repeats against >= 1.1:
// half-width 0.305 toward the threshold, 0.112 from it) would likely
// settle at 7 repeats, where the t quantile has fallen from 7.30 to 3.50;
// a standard error shrinking alone would say 23. The answer is the first
// repeats at which the interval fits, and the cap when none does.
func TestRepeatsNeeded(t *testing.T) {
	level := Default.Level()
	got := RepeatsNeeded(3, 2, 0.305, 0.112, level, 100)
	q := 1 - (1-level)/2
	sd := 0.305 / studentQuantile(q, 2) * math.Sqrt(3)
	fits := func(m int) bool { return studentQuantile(q, float64(m-1))*sd/math.Sqrt(float64(m)) <= 0.112 }
	if got != 6 || !fits(got) || fits(got-1) {
		t.Errorf("RepeatsNeeded(3, 2, 0.305, 0.112) = %d, want 6, the first that fits", got)
	}
	// A prior's degrees of freedom: the quantile is near its limit already.
	if got := RepeatsNeeded(3, 22, 0.1, 0.05, level, 100); got < 8 || got > 13 {
		t.Errorf("pooled, half-width twice the distance: %d repeats, want 8 to 13 (4 times 3, less the quantile's small fall)", got)
	}
	if got := RepeatsNeeded(3, 2, 1, 0.001, level, 100); got != 100 {
		t.Errorf("far from settling: %d, want the cap", got)
	}
	if got := RepeatsNeeded(3, 2, 0, 0.1, level, 100); got != 100 {
		t.Errorf("no interval: %d, want the cap", got)
	}
}
