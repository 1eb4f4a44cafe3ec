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
	mk := func() *Verdict {
		c := Condition{Name: "ratio", Value: 1.5, Op: ">=", Threshold: 1.02, Draws: draws}
		iv, _ := stats.PercentileInterval(draws, 1.5)
		c.CI95 = &iv
		v := &Verdict{Conditions: []Condition{c}, Repeats: 5}
		if out, _, err := Combine(v.Conditions, 5); err != nil || out != Reproduced {
			t.Fatalf("at 95%%: %v, %v; want reproduced", out, err)
		}
		v.Outcome, v.Reproduced = Reproduced, true
		return v
	}
	v := mk()
	open, err := v.JudgeAt(0.99)
	if err != nil {
		t.Fatal(err)
	}
	c := v.Conditions[0]
	if v.Outcome != Inconclusive || v.Reproduced || c.Outcome != Inconclusive || len(open) != 1 || c.CISettle == nil {
		t.Fatalf("at 99%%: outcome %q, condition %q, open %v, interval %v; want inconclusive on [1.005, 1.995]", v.Outcome, c.Outcome, open, c.CISettle)
	}
	if *c.CI95 != (stats.Interval{1.024, 1.974}) || open[0] != c.CISettle[1]-c.CISettle[0] {
		t.Errorf("95%% interval %v (want [1.024, 1.974] kept), open width %v (want the 99%% one's)", *c.CI95, open[0])
	}
	v = mk()
	if open, _ := v.JudgeAt(0.95); v.Outcome != Reproduced || len(open) != 0 {
		t.Errorf("at 95%%: %q with %d open, want reproduced as Combine said", v.Outcome, len(open))
	}
	v = mk()
	v.Disturbed = "other work"
	if _, _ = v.JudgeAt(0.95); v.Outcome != Inconclusive {
		t.Errorf("disturbed: %q, want inconclusive", v.Outcome)
	}
}
