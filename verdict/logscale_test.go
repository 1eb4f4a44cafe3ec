package verdict

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/settle"
)

// logTrial runs one sequence of the rule's looks (settle.Default: a pilot
// at 1, looks at 3, 5, 8) on per-repeat ratios drawn log-normal, exp(mu +
// sd z), judged as a LogScale condition "ratio >= thr" by JudgeAt. It
// returns the outcome it stopped at (1 reproduced, -1 not, 0
// inconclusive) and the repeats.
func logTrial(seed uint64, mu, sd, thr float64) (int, int) {
	rng := rand.New(rand.NewPCG(seed, 13))
	r := settle.Default
	schedule := r.Schedule(1, 80)
	var per []float64
	var looks []settle.Look
	for {
		want := schedule[len(looks)]
		for len(per) < want {
			per = append(per, math.Exp(mu+sd*rng.NormFloat64()))
		}
		logs := 0.0
		for _, x := range per {
			logs += math.Log(x) / float64(len(per))
		}
		// Per-repeat values alone: a pilot look judges nothing.
		c := Condition{Name: "a / b", Value: math.Exp(logs), Op: ">=", Threshold: thr, PerRepeat: per, LogScale: true}
		v := &Verdict{Conditions: []Condition{c}, Repeats: want}
		open, err := v.JudgeAt(r.Level())
		if err != nil {
			panic(err)
		}
		looks = append(looks, settle.Look{Repeats: want, Open: open, Took: time.Second, Added: 1})
		if d := r.Decide(looks, schedule, time.Hour); d.Stop {
			out := map[Reproduction]int{Reproduced: 1, NotReproduced: -1}[v.Outcome]
			return out, want
		}
	}
}

// TestLogScaleFalseVerdictRate feeds the rule ratios whose spread is
// large against their size (a per-repeat log spread of 0.4, as F8's and
// F6's ratios had) with the geometric mean on the threshold (every
// conclusive verdict false) and with a known effect (twice the
// threshold): judged on the log scale the false-verdict rate stays at or
// under the stated 5%, and the known effect is reproduced in most
// sequences.
func TestLogScaleFalseVerdictRate(t *testing.T) {
	if testing.Short() {
		t.Skip("many trials")
	}
	const n, thr, sd = 4000, 1.5, 0.4
	alpha := settle.Default.Alpha
	false_, reps := 0, 0
	for i := range n {
		out, k := logTrial(uint64(9000+i), math.Log(thr), sd, thr)
		if out != 0 {
			false_++
		}
		reps += k
	}
	rate := float64(false_) / n
	t.Logf("log scale, geometric mean on the threshold: %.4f false verdicts over %d sequences, %.2f repeats on average; stated at most %.3f", rate, n, float64(reps)/n, alpha)
	if rate > alpha+2*math.Sqrt(alpha*(1-alpha)/n) {
		t.Errorf("false-verdict rate %.4f on the log scale, stated at most %.3f", rate, alpha)
	}
	const m = 1000
	pow, wrong, preps := 0, 0, 0
	for i := range m {
		out, k := logTrial(uint64(20000+i), math.Log(2*thr), sd, thr)
		switch out {
		case 1:
			pow++
		case -1:
			wrong++
		}
		preps += k
	}
	t.Logf("log scale, known effect (twice the threshold): %.3f reproduced, %.3f not, %.2f repeats on average", float64(pow)/m, float64(wrong)/m, float64(preps)/m)
	if float64(pow)/m < 0.8 || wrong > 0 {
		t.Errorf("known effect: %.3f reproduced (want 0.8 or more), %d not reproduced", float64(pow)/m, wrong)
	}
}
