package verdict

import (
	"testing"

	"github.com/throttlelab/throttlelab/stats"
)

// TestJudgeAt judges a condition whose 95% interval clears its threshold
// but whose interval at a stricter level does not: the verdict turns
// inconclusive, keeps its 95% interval, and reports the open width; a
// disturbed verdict stays inconclusive whatever its intervals.
func TestJudgeAt(t *testing.T) {
	draws := make([]float64, 1000)
	for i := range draws {
		draws[i] = 1 + float64(i)/1000 // 1.000 .. 1.999
	}
	mk := func(repeats int) *Verdict {
		c := Condition{Name: "ratio", Value: 1.5, Op: ">=", Threshold: 1.02, Draws: draws}
		iv, _ := stats.PercentileInterval(draws, 1.5)
		c.CI95 = &iv
		v := &Verdict{Conditions: []Condition{c}, Repeats: repeats}
		if out, _, err := Combine(v.Conditions, repeats); err != nil || out != Reproduced {
			t.Fatalf("at 95%%: %v, %v; want reproduced", out, err)
		}
		v.Outcome, v.Reproduced = Reproduced, true
		return v
	}
	v := mk(5)
	open, err := v.JudgeAt(0.99)
	if err != nil {
		t.Fatal(err)
	}
	c := v.Conditions[0]
	if v.Outcome != Inconclusive || v.Reproduced || c.Outcome != Inconclusive || len(open) != 1 || c.CISettle == nil {
		t.Fatalf("at 99%%: outcome %q, condition %q, open %v, interval %v; want inconclusive on [0.511, 2.489]", v.Outcome, c.Outcome, open, c.CISettle)
	}
	// The 99% interval [1.005, 1.995] of the draws, widened for 5
	// repeats by sqrt(5/4) t(4, 0.995)/z(0.995) = 1.998 around 1.5.
	if iv := *c.CISettle; iv[0] < 0.505 || iv[0] > 0.517 || iv[1] < 2.483 || iv[1] > 2.495 {
		t.Errorf("99%% interval at 5 repeats %v, want about [0.511, 2.489]", iv)
	}
	if *c.CI95 != (stats.Interval{1.024, 1.974}) || open[0] != c.CISettle[1]-c.CISettle[0] {
		t.Errorf("95%% interval %v (want [1.024, 1.974] kept), open width %v (want the 99%% one's)", *c.CI95, open[0])
	}
	// Many repeats: the widening is slight (1.0025 at 1000 repeats) and
	// the 95% judgement stands.
	v = mk(1000)
	if open, _ := v.JudgeAt(0.95); v.Outcome != Reproduced || len(open) != 0 {
		t.Errorf("at 95%%, 1000 repeats: %q with %d open, want reproduced as Combine said", v.Outcome, len(open))
	}
	// Two repeats: a pilot look judges nothing, whatever the interval.
	v = mk(2)
	if open, _ := v.JudgeAt(0.5); v.Outcome != Inconclusive || len(open) != 1 {
		t.Errorf("at 2 repeats: %q with %d open, want inconclusive (a pilot look)", v.Outcome, len(open))
	}
	v = mk(5)
	v.Disturbed = "other work"
	if _, _ = v.JudgeAt(0.95); v.Outcome != Inconclusive {
		t.Errorf("disturbed: %q, want inconclusive", v.Outcome)
	}
}
