package verdict

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/stats"
)

func TestConditionJudge(t *testing.T) {
	iv := func(lo, hi float64) *stats.Interval { return &stats.Interval{lo, hi} }
	cases := []struct {
		name string
		c    Condition
		reps int
		want Reproduction
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
			if err := c.c.Judge(c.reps); err != nil {
				t.Fatal(err)
			}
			if c.c.Outcome != c.want || c.c.RepeatsNeeded != c.need {
				t.Errorf("%s: got %s (repeats %d), want %s (repeats %d)", c.c, c.c.Outcome, c.c.RepeatsNeeded, c.want, c.need)
			}
		})
	}
}

func TestCombine(t *testing.T) {
	pass := Condition{Value: 3, Op: ">=", Threshold: 2}
	fail := Condition{Value: 1, Op: ">=", Threshold: 2}
	maybe := Condition{Value: 2.5, CI95: &stats.Interval{1.5, 3.5}, Op: ">=", Threshold: 2}
	for _, c := range []struct {
		conds []Condition
		want  Reproduction
	}{
		{[]Condition{pass, pass}, Reproduced},
		{[]Condition{pass, maybe}, Inconclusive},
		{[]Condition{maybe, fail}, NotReproduced},
	} {
		got, need, err := Combine(c.conds, 1)
		if err != nil || got != c.want || (got == Inconclusive) != (need > 0) {
			t.Errorf("%v: %s, %d repeats, %v", c.conds, got, need, err)
		}
	}
	v := &Verdict{Finding: "F1", Outcome: Inconclusive, RepeatsNeeded: 8, Repeats: 2, Conditions: []Condition{maybe}}
	if l := v.Line(); !strings.Contains(l, "INCONCLUSIVE") || !strings.Contains(l, "about 8 repeats") || !strings.Contains(l, "[1.5, 3.5]") {
		t.Errorf("line %q", l)
	}
}

// TestShortAndDetails: the short line counts the conditions by outcome and
// stays short; the details carry every interval and the explanation.
func TestShortAndDetails(t *testing.T) {
	conds := []Condition{
		{Name: "a", Value: 3, Op: ">=", Threshold: 2, Outcome: Reproduced},
		{Name: "b", Value: 2.5, CI95: &stats.Interval{1.5, 3.5}, Op: ">=", Threshold: 2, Outcome: Inconclusive},
		{Name: "c", Value: 1, Op: ">=", Threshold: 2, Outcome: NotReproduced},
	}
	v := &Verdict{Finding: "F1", Preset: "f01-logjam", Outcome: NotReproduced, Conditions: conds, Check: "the check",
		Numbers: strings.Repeat("figures ", 100), Why: "because"}
	if got, want := v.Short(), "F1 NOT REPRODUCED (f01-logjam): 1 of 3 conditions hold, 1 inconclusive, 1 fail"; got != want {
		t.Errorf("short %q, want %q", got, want)
	}
	d := strings.Join(v.Details(), "\n")
	for _, want := range []string{"F1 check: the check", "F1 95% interval: b 2.5 [1.5, 3.5] >= 2: inconclusive", "F1 why: because"} {
		if !strings.Contains(d, want) {
			t.Errorf("no %q in the details:\n%s", want, d)
		}
	}
}

// TestBadConditionsAreErrors: a condition the check could not have meant
// (an unknown operator, a NaN or infinite figure, an empty range) is an
// error, never an inconclusive outcome that would ask for more repeats.
func TestBadConditionsAreErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		name string
		c    Condition
	}{
		{"unknown operator", Condition{Name: "x", Value: 3, Op: ">", Threshold: 2}},
		{"no operator", Condition{Name: "x", Value: 3, Threshold: 2}},
		{"NaN figure", Condition{Name: "x", Value: nan, Op: ">=", Threshold: 2}},
		{"NaN threshold", Condition{Name: "x", Value: 3, Op: "<=", Threshold: nan}},
		{"NaN in the interval", Condition{Name: "x", Value: 3, CI95: &stats.Interval{nan, 4}, Op: ">=", Threshold: 2}},
		{"infinite figure", Condition{Name: "x", Value: inf, Op: ">=", Threshold: 2}},
		{"NaN top of a range", Condition{Name: "x", Value: 0.5, Op: "between", Threshold: 0.4, High: nan}},
		{"empty range", Condition{Name: "x", Value: 0.5, Op: "between", Threshold: 0.8, High: 0.4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cond := c.c
			if err := cond.Judge(1); !errors.Is(err, ErrBadCondition) || !strings.Contains(err.Error(), `"x"`) {
				t.Errorf("Judge: %v, outcome %q", err, cond.Outcome)
			}
			pass := Condition{Value: 3, Op: ">=", Threshold: 2}
			if out, _, err := Combine([]Condition{pass, c.c}, 1); !errors.Is(err, ErrBadCondition) {
				t.Errorf("Combine: %s, %v", out, err)
			}
		})
	}
}
