package record

import (
	"strings"
	"testing"
)

func TestConditionJudge(t *testing.T) {
	iv := func(lo, hi float64) *Interval { return &Interval{lo, hi} }
	cases := []struct {
		name string
		c    Condition
		reps int
		want Outcome
		need int
	}{
		{"at least, clears", Condition{Value: 3, CI95: iv(2.5, 3.5), Op: ">=", Threshold: 2}, 1, Reproduced, 0},
		{"at least, clears the opposite", Condition{Value: 1, CI95: iv(0.8, 1.2), Op: ">=", Threshold: 2}, 1, NotReproduced, 0},
		// Half-width 1 toward the threshold, 0.5 away: 2 x (1/0.5)^2 = 8.
		{"at least, straddles", Condition{Value: 2.5, CI95: iv(1.5, 3.5), Op: ">=", Threshold: 2}, 2, Inconclusive, 8},
		{"at most, clears", Condition{Value: 1, CI95: iv(0.9, 1.1), Op: "<=", Threshold: 1.2}, 1, Reproduced, 0},
		{"at most, clears the opposite", Condition{Value: 1.5, CI95: iv(1.3, 1.7), Op: "<=", Threshold: 1.2}, 1, NotReproduced, 0},
		{"at most, on the threshold", Condition{Value: 1.2, CI95: iv(1.1, 1.3), Op: "<=", Threshold: 1.2}, 1, Inconclusive, MaxRepeatsEstimate},
		{"between, inside", Condition{Value: 0.6, CI95: iv(0.5, 0.7), Op: "between", Threshold: 0.45, High: 0.75}, 1, Reproduced, 0},
		{"between, above", Condition{Value: 0.9, CI95: iv(0.8, 1), Op: "between", Threshold: 0.45, High: 0.75}, 1, NotReproduced, 0},
		{"between, straddles the top", Condition{Value: 0.7, CI95: iv(0.6, 0.8), Op: "between", Threshold: 0.45, High: 0.75}, 1, Inconclusive, 4},
		{"no interval, point passes", Condition{Value: 0.5, Op: "<=", Threshold: 1}, 1, Reproduced, 0},
		{"no interval, point fails", Condition{Value: 1.5, Op: "<=", Threshold: 1}, 1, NotReproduced, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.c.Judge(c.reps)
			if c.c.Outcome != c.want || c.c.RepeatsNeeded != c.need {
				t.Errorf("%s: got %s (repeats %d), want %s (repeats %d)", c.c, c.c.Outcome, c.c.RepeatsNeeded, c.want, c.need)
			}
		})
	}
}

func TestCombine(t *testing.T) {
	pass := Condition{Value: 3, Op: ">=", Threshold: 2}
	fail := Condition{Value: 1, Op: ">=", Threshold: 2}
	maybe := Condition{Value: 2.5, CI95: &Interval{1.5, 3.5}, Op: ">=", Threshold: 2}
	for _, c := range []struct {
		conds []Condition
		want  Outcome
	}{
		{[]Condition{pass, pass}, Reproduced},
		{[]Condition{pass, maybe}, Inconclusive},
		{[]Condition{maybe, fail}, NotReproduced},
	} {
		got, need := Combine(c.conds, 1)
		if got != c.want || (got == Inconclusive) != (need > 0) {
			t.Errorf("%v: %s, %d repeats", c.conds, got, need)
		}
	}
	v := &Verdict{Finding: "F1", Outcome: Inconclusive, RepeatsNeeded: 8, Repeats: 2, Conditions: []Condition{maybe}}
	if l := v.Line(); !strings.Contains(l, "INCONCLUSIVE") || !strings.Contains(l, "about 8 repeats") || !strings.Contains(l, "[1.5, 3.5]") {
		t.Errorf("line %q", l)
	}
}
