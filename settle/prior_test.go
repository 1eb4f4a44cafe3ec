package settle

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestFQuantile(t *testing.T) {
	// Tabled upper 5% and 25% points of F.
	for _, c := range []struct{ p, d1, d2, want float64 }{
		{0.95, 1, 1, 161.45},
		{0.95, 2, 10, 4.103},
		{0.95, 5, 20, 2.711},
		{0.75, 2, 7, 1.701},
		{0.5, 6, 6, 1},
	} {
		if got := fQuantile(c.p, c.d1, c.d2); math.Abs(got-c.want) > 0.005*c.want {
			t.Errorf("F quantile %g (%g, %g) = %.4f, want %.4f", c.p, c.d1, c.d2, got, c.want)
		}
	}
}

func TestPooledInterval(t *testing.T) {
	v := []float64{0.80, 0.86, 0.83}
	own, pool, ok := PooledInterval(v, 0.83, 0.98, nil)
	if !ok || pool.Pooled || pool.Words != "" {
		t.Fatalf("no prior: %v %+v %v, want the own interval, not pooled", own, pool, ok)
	}
	p := &Prior{SD: 0.04, DF: 20, Repeats: 24, Date: "2026-11-29", Source: "test"}
	iv, pool, ok := PooledInterval(v, 0.83, 0.98, p)
	if !ok || !pool.Pooled || pool.DF != 22 || pool.Words != "pooled with 24 earlier repeats from 2026-11-29" {
		t.Fatalf("consistent spread: %+v, want pooled with 22 df", pool)
	}
	if iv[1]-iv[0] >= (own[1]-own[0])/2 {
		t.Errorf("pooled interval %v not under half the own %v", iv, own)
	}
	// A spread ten times the prior's: the guard falls back to the own interval.
	wide := []float64{0.5, 1.1, 0.83}
	iv, pool, _ = PooledInterval(wide, 0.83, 0.98, p)
	want, _ := RepeatInterval(wide, 0.83, 0.98)
	if pool.Pooled || iv != want || pool.Words == "" {
		t.Errorf("inconsistent spread: %v %+v, want the own interval %v and words saying so", iv, pool, want)
	}
	if _, ok := PriorOf([][]float64{{1}, {2}}, "d", "s"); ok {
		t.Error("a prior from runs of one value each")
	}
	pr, ok := PriorOf([][]float64{{1, 3}, {2, 2, 5}}, "d", "s")
	// (2 + 6) / (1 + 2)
	if !ok || pr.DF != 3 || pr.Repeats != 5 || math.Abs(pr.SD-math.Sqrt(8.0/3)) > 1e-12 {
		t.Errorf("PriorOf: %+v", pr)
	}
}

// pooledTrial runs one sequence of looks of the rule r on per-repeat
// values drawn normal around truth with standard deviation sd, judged
// "value >= thr" on PooledInterval with a prior whose spread was itself
// estimated from priorDF+1 values of standard deviation 1 (so the prior is
// as noisy as a real one). It returns the outcome (1, -1, 0) and the
// repeats.
func pooledTrial(r Rule, schedule []int, seed uint64, truth, thr, sd float64, priorDF int) (int, int) {
	rng := rand.New(rand.NewPCG(seed, 11))
	ss := 0.0
	for range priorDF {
		z := rng.NormFloat64()
		ss += z * z
	}
	var p *Prior
	if priorDF > 0 {
		p = &Prior{SD: math.Sqrt(ss / float64(priorDF)), DF: priorDF, Repeats: priorDF + 1, Date: "test"}
	}
	var v []float64
	var looks []Look
	for {
		want := schedule[len(looks)]
		for len(v) < want {
			v = append(v, truth+sd*rng.NormFloat64())
		}
		iv, _, ok := PooledInterval(v, math.NaN(), r.Level(), p)
		out, l := judgeLook(want, iv, ok, thr)
		looks = append(looks, l)
		if d := r.Decide(looks, schedule, time.Hour); d.Stop {
			return out, want
		}
	}
}

// pooledRates is pooledTrial over n seeds: the shares reproduced and not,
// the mean repeats, and the share conclusive at the first judging look.
func pooledRates(r Rule, schedule []int, n int, truth, thr, sd float64, priorDF int) (rep, not, reps, atFirst float64) {
	judge := schedule[1]
	for i := range n {
		out, k := pooledTrial(r, schedule, uint64(5000+i), truth, thr, sd, priorDF)
		if out != 0 && k == judge {
			atFirst++
		}
		switch out {
		case 1:
			rep++
		case -1:
			not++
		}
		reps += float64(k)
	}
	return rep / float64(n), not / float64(n), reps / float64(n), atFirst / float64(n)
}

// TestPooledFalseVerdictRate feeds the rule, judging on PooledInterval,
// null sequences (the truth on the threshold: every conclusive verdict is
// false) whose true spread equals the prior's, and 1.5 and 2 times it
// (there the guard must keep the rate near the stated level), with priors
// of 7 degrees of freedom (one earlier run of 8 repeats) and of 20; and a
// known effect of 1.5 prior standard deviations, where the prior must
// settle more sequences at the first judging look (3 repeats) and in fewer
// repeats on average than the rule without one, in the same run. A first
// judging look at 2 repeats instead of 3 gives more false verdicts when the
// spread has doubled: the test shows it, which is why the rule keeps 3.
// docs/methodology.md has the figures.
func TestPooledFalseVerdictRate(t *testing.T) {
	if testing.Short() {
		t.Skip("many trials")
	}
	r := Default
	const n, m = 4000, 1000
	se := 2 * math.Sqrt(r.Alpha*(1-r.Alpha)/n)
	sch := r.Schedule(1, 80)
	nPow, _, nReps, nFirst := pooledRates(r, sch, m, 1.5, 0, 1, 0)
	t.Logf("no prior, known effect of 1.5 standard deviations: %.3f reproduced, %.2f repeats on average, %.3f conclusive at the first judging look", nPow, nReps, nFirst)
	for _, df := range []int{7, 20} {
		for _, c := range []struct {
			sd, most float64
		}{{1, r.Alpha + se}, {1.5, 0.055 + se}, {2, 0.065 + se}} {
			rep, not, reps, _ := pooledRates(r, sch, n, 0, 0, c.sd, df)
			t.Logf("prior of %d df, true spread %.1fx the prior's, no effect: %.4f false verdicts (%.4f reproduced, %.4f not) over %d trials, %.2f repeats on average; stated at most %.3f",
				df, c.sd, rep+not, rep, not, n, reps, r.Alpha)
			if rep+not > c.most {
				t.Errorf("prior of %d df, spread %.1fx: false-verdict rate %.4f, want at most %.4f", df, c.sd, rep+not, c.most)
			}
		}
		pow, wrong, preps, first := pooledRates(r, sch, m, 1.5, 0, 1, df)
		t.Logf("prior of %d df, known effect of 1.5 standard deviations: %.3f reproduced, %.3f not, %.2f repeats on average, %.3f conclusive at the first judging look", df, pow, wrong, preps, first)
		if wrong > r.Alpha || first <= nFirst+0.05 || preps >= nReps {
			t.Errorf("prior of %d df, known effect: %.3f not reproduced, %.3f conclusive at the first look (%.3f without a prior), %.2f repeats (%.2f without): no better", df, wrong, first, nFirst, preps, nReps)
		}
	}
	// A first judging look at 2 repeats (1, 2, 4, 7) would be cheaper, but
	// the guard's F test on one degree of freedom lets a doubled spread
	// through too often: the rate it gives there is past the one at 3.
	early := []int{1, 2, 4, 7}
	for _, df := range []int{7, 20} {
		a, b, _, _ := pooledRates(r, sch, n, 0, 0, 2, df)
		at3 := a + b
		rep, not, _, _ := pooledRates(r, early, n, 0, 0, 2, df)
		pow, _, preps, first := pooledRates(r, early, m, 1.5, 0, 1, df)
		t.Logf("first judging look at 2 (%v), prior of %d df: true spread 2x the prior's, %.4f false verdicts (%.4f with the first at 3); known effect %.3f reproduced, %.2f repeats, %.3f conclusive at the first look", early, df, rep+not, at3, pow, preps, first)
		if rep+not <= at3+se {
			t.Errorf("a first look at 2 gave %.4f false verdicts at twice the prior's spread, not past the %.4f at 3: the rule could judge earlier", rep+not, at3)
		}
	}
}
