package settle

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/stats"
)

// trial runs one sequence of looks on simulated repeats of two configs
// whose true mean ratio is truth, judging "ratio >= thr" on the same
// hierarchical-bootstrap intervals the verdicts use, each look at level.
// It returns the outcome it stopped at (1 reproduced, -1 not reproduced,
// 0 inconclusive) and the repeats it took.
func trial(t *testing.T, r Rule, level float64, seed uint64, truth, thr float64) (int, int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	// Each repeat is a run of each config: a run-to-run offset (5%) and
	// 40 requests with a spread of 30% of the mean.
	run := func(mu float64) *stats.Sample {
		m := mu * (1 + 0.05*rng.NormFloat64())
		v := make([]float64, 40)
		for i := range v {
			v[i] = m * (1 + 0.3*rng.NormFloat64())
		}
		return stats.NewSample(v)
	}
	schedule := r.Schedule(3, 80)
	var a, b []*stats.Sample
	var looks []Look
	for {
		want := schedule[len(looks)]
		for len(a) < want {
			a, b = append(a, run(truth)), append(b, run(1))
		}
		d := stats.Resample([][]*stats.Sample{a, b}, stats.Mean, stats.Resamples, stats.BootstrapSeed)
		ma, mb := make([]float64, len(a)), make([]float64, len(b))
		for i := range a {
			ma[i], mb[i] = a[i].Mean, b[i].Mean
		}
		iv, ok := Interval(stats.Ratio(d[0], d[1]), stats.Median(ma)/stats.Median(mb), level)
		if !ok {
			t.Fatal("no interval")
		}
		out := 0
		switch {
		case iv[0] >= thr:
			out = 1
		case iv[1] < thr:
			out = -1
		}
		l := Look{Repeats: want, Took: time.Second, Added: want}
		if out == 0 {
			l.Open = map[int]float64{0: iv[1] - iv[0]}
		}
		looks = append(looks, l)
		if dec := r.Decide(looks, schedule, time.Hour); dec.Stop {
			return out, want
		}
	}
}

// rates runs n trials and returns the share of conclusive verdicts that
// are reproduced and not reproduced, and the mean repeats.
func rates(t *testing.T, r Rule, level float64, n int, truth, thr float64) (rep, not, reps float64) {
	for i := range n {
		out, k := trial(t, r, level, uint64(1000+i), truth, thr)
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

// TestFalseVerdictRate feeds the rule simulated repeats with no effect
// beyond the threshold (the true ratio on it: every conclusive verdict is
// false, the worst case) and with a known effect, and checks the stated
// rate holds, the power is reasonable, and a plain 95% re-test at every
// look would have inflated the rate.
func TestFalseVerdictRate(t *testing.T) {
	if testing.Short() {
		t.Skip("many trials")
	}
	r := Default
	const n = 300
	rep, not, _ := rates(t, r, r.Level(), n, 1.1, 1.1)
	falseRate := rep + not
	t.Logf("no effect: %.3f false verdicts (%.3f reproduced, %.3f not), stated at most %.3f", falseRate, rep, not, r.Alpha)
	// The estimate's own noise over n trials: allow two standard errors
	// above the stated rate.
	if se := math.Sqrt(r.Alpha * (1 - r.Alpha) / n); falseRate > r.Alpha+2*se {
		t.Errorf("false-verdict rate %.3f over %d trials, stated at most %.3f", falseRate, n, r.Alpha)
	}
	naiveRep, naiveNot, _ := rates(t, r, 0.95, n, 1.1, 1.1)
	t.Logf("plain 95%% at every look: %.3f false verdicts", naiveRep+naiveNot)
	if naiveRep+naiveNot <= falseRate {
		t.Errorf("a plain 95%% re-test gave %.3f false verdicts, no more than the rule's %.3f: the test cannot tell the rule from none", naiveRep+naiveNot, falseRate)
	}
	pow, wrong, reps := rates(t, r, r.Level(), 200, 1.25, 1.1)
	t.Logf("known effect (1.25 against 1.1): %.3f reproduced, %.3f not, %.1f repeats on average", pow, wrong, reps)
	if pow < 0.8 || wrong > r.Alpha {
		t.Errorf("known effect: reproduced %.3f (want 0.8 or more), not reproduced %.3f (want at most %.3f)", pow, wrong, r.Alpha)
	}
}

func TestSchedule(t *testing.T) {
	got := Default.Schedule(3, 60)
	want := []int{3, 5, 8, 12, 18, 27, 41, 60}
	if len(got) != len(want) {
		t.Fatalf("Schedule(3, 60) = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Schedule(3, 60) = %v, want %v", got, want)
		}
	}
	if got := Default.Schedule(1, 4); len(got) != 4 || got[3] != 4 {
		t.Errorf("Schedule(1, 4) = %v, want [1 2 3 4]", got)
	}
}

func TestDecide(t *testing.T) {
	r := Default
	sch := []int{3, 5, 8, 12}
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
		{"just fits", []Look{{Repeats: 3, Open: open(1), Took: 3 * s, Added: 3}}, 5 * s, Decision{Next: 5}},
		// 9 s spent, 3 more repeats at the slowest, 3 s each: 18 s.
		{"slowest repeat predicts", []Look{{Repeats: 3, Open: open(1), Took: 3 * s, Added: 3}, {Repeats: 5, Open: open(0.8), Took: 6 * s, Added: 2}}, 17 * s, Decision{Stop: true, Reason: Budget}},
		{"stalled", []Look{{Repeats: 3, Open: open(1)}, {Repeats: 5, Open: open(0.9)}, {Repeats: 8, Open: open(0.95)}}, time.Hour, Decision{Stop: true, Reason: Stalled}},
		{"shrinking", []Look{{Repeats: 3, Open: open(1)}, {Repeats: 5, Open: open(0.9)}, {Repeats: 8, Open: open(0.7)}}, time.Hour, Decision{Next: 12}},
		{"newly open is not stalled", []Look{{Repeats: 3}, {Repeats: 5, Open: open(0.9)}, {Repeats: 8, Open: open(0.95)}}, time.Hour, Decision{Next: 12}},
		{"last look", []Look{{Repeats: 3, Open: open(1)}, {Repeats: 5, Open: open(0.5)}, {Repeats: 8, Open: open(0.3)}, {Repeats: 12, Open: open(0.2)}}, time.Hour, Decision{Stop: true, Reason: LastLook}},
	} {
		if got := r.Decide(c.looks, sch, c.budget); got != c.want {
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
