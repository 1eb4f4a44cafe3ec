package verdict

import (
	"fmt"
	"math"
	"slices"

	"github.com/throttlelab/throttlelab/settle"
	"github.com/throttlelab/throttlelab/stats"
)

// Settling is how a verdict of repeats until settled came about: the rule
// it was judged by, how many repeats it took and why they stopped. Such a
// verdict's outcome is judged at the rule's Level (each condition's
// CISettle), not at 95%.
type Settling struct {
	// Level is the confidence of the intervals judged at every look.
	Level float64 `json:"level"`
	// Rate states the rule's false-verdict rate in words.
	Rate string `json:"rate"`
	// Looks is how many times the check was judged; Repeats how many
	// repeats the last look had.
	Looks   int `json:"looks"`
	Repeats int `json:"repeats"`
	// Reason is why the repeats stopped (settle.Reason); Words says it
	// with the repeats ("settled after 4 repeats").
	Reason string `json:"reason"`
	Words  string `json:"words"`
	// Budget is the time the repeats were given ("10m0s").
	Budget string `json:"budget"`
	// First is the repeats of the schedule's first look (the spec's own),
	// which fixes the schedule; Next, after a stop for the budget, is the
	// repeats the next look would have had: a later round may continue to
	// it (runner.Settle.Continue).
	First int `json:"first_repeats,omitempty"`
	Next  int `json:"next_repeats,omitempty"`
}

// JudgeAt judges the verdict again at a sequential rule's level (settle):
// every condition with per-repeat values gets their t interval at level
// (settle.RepeatInterval), one with only bootstrap draws its interval at
// level widened for few repeats (settle.Widen), as CISettle, and its outcome
// from it; below settle.MinJudge repeats every such condition is
// inconclusive (a pilot look), and the verdict's outcome is summed
// up from those as Combine sums them. A disturbed verdict stays
// inconclusive (whatever the widths: more repeats do not undo the runs
// that were disturbed). It returns the widths of the intervals of the conditions
// left inconclusive, by index (none: settled). The t interval of the
// per-repeat values can be narrower than the 95% bootstrap one (which
// counts the within-run spread twice), so a condition inconclusive at 95%
// can be conclusive at the rule's level.
//
// A condition with per-repeat values and a Prior is judged on the t
// interval of the variance pooled with the prior's (settle.PooledInterval),
// and Pooled says so. When the repeats stopped for the rule (its last look,
// or the intervals no longer shrinking: v.Settle set before the call), a
// condition still straddling its threshold with an Indifference is judged
// with the margin (withinMargin): more repeats were not going to settle it.
func (v *Verdict) JudgeAt(level float64) (map[int]float64, error) {
	open := map[int]float64{}
	final := v.Settle != nil && (v.Settle.Reason == string(settle.LastLook) || v.Settle.Reason == string(settle.Stalled))
	for i := range v.Conditions {
		c := &v.Conditions[i]
		c.Pooled = ""
		iv, pool, perRepeat := c.repeatInterval(level)
		if perRepeat {
			c.CISettle, c.Pooled = &iv, pool.Words
		} else if c.Draws != nil {
			if iv, ok := settle.Interval(c.Draws, c.Value, level); ok {
				iv = settle.Widen(iv, c.Value, v.Repeats, level)
				c.CISettle = &iv
			}
		}
		j := *c
		if c.CISettle != nil {
			j.CI95 = c.CISettle
		}
		if err := j.Judge(v.Repeats); err != nil {
			return nil, err
		}
		c.Outcome, c.RepeatsNeeded, c.Indifferent = j.Outcome, j.RepeatsNeeded, j.Indifferent
		if perRepeat && c.Outcome == Inconclusive {
			// Judge's estimate counts only the standard error's
			// shrinking; a t interval's quantile shrinks too.
			dist, half := j.distHalf(iv[0], iv[1])
			c.RepeatsNeeded = max(settle.RepeatsNeeded(pool.N, pool.DF, half, dist, level, MaxRepeatsEstimate), v.Repeats+1)
		}
		c.WithinMargin = ""
		if final && c.Outcome == Inconclusive && v.Repeats >= settle.MinJudge {
			c.Outcome, c.WithinMargin = j.withinMargin()
			if c.Outcome != Inconclusive {
				c.RepeatsNeeded = 0
			}
		}
		if v.Repeats < settle.MinJudge && (c.Draws != nil || c.PerRepeat != nil) {
			// A pilot look judges nothing (settle.MinJudge): its
			// intervals cannot hold the run-to-run variation.
			c.Outcome, c.Indifferent = Inconclusive, false
			c.RepeatsNeeded = max(c.RepeatsNeeded, settle.MinJudge)
			open[i] = math.Inf(1)
			continue
		}
		if c.Outcome == Inconclusive {
			w := 0.0
			if j.CI95 != nil {
				w = j.CI95[1] - j.CI95[0]
			}
			open[i] = w
		}
	}
	out, need := Reproduced, 0
	for _, c := range v.Conditions {
		switch c.Outcome {
		case NotReproduced:
			out = NotReproduced
		case Inconclusive:
			if out != NotReproduced {
				out = Inconclusive
			}
			need = max(need, c.RepeatsNeeded)
		}
	}
	if out != Inconclusive {
		need = 0
	}
	if v.Disturbed != "" && !v.SelfCheck {
		if out != Inconclusive {
			need = 0
		}
		out = Inconclusive
	}
	v.Outcome, v.Reproduced, v.RepeatsNeeded = out, out == Reproduced, need
	switch {
	case out == Reproduced:
		v.Why = ""
	case v.Why == "":
		v.Why = v.Reading
	}
	byMargin := slices.ContainsFunc(v.Conditions, func(c Condition) bool { return c.WithinMargin != "" })
	if final && out != Inconclusive && byMargin {
		v.Settle.Words = fmt.Sprintf("%s after %d repeats: judged with the indifference margin", v.Settle.Reason, v.Settle.Repeats)
	}
	return open, nil
}

// repeatInterval is the condition's interval at level from its per-repeat
// values pooled with its prior (settle.PooledInterval). A LogScale
// condition whose values and point are all positive is judged on the
// logs, with a prior of logs only (Prior.Scale), and the interval is
// back-transformed: a ratio's spread grows with its size, which a linear
// t interval of three ratios turns into a wide, even negative, interval.
// A prior on the other scale is not used.
func (c Condition) repeatInterval(level float64) (stats.Interval, settle.Pooling, bool) {
	values, point, prior := c.PerRepeat, c.Value, c.Prior
	logged := false
	if c.LogScale && point > 0 {
		if l := settle.Logs(values); l != nil {
			values, point, logged = l, math.Log(point), true
		}
	}
	if prior != nil && (prior.Scale == settle.LogScale) != logged {
		prior = nil
	}
	iv, pool, ok := settle.PooledInterval(values, point, level, prior)
	if ok && logged {
		iv = stats.Interval{math.Exp(iv[0]), math.Exp(iv[1])}
	}
	return iv, pool, ok
}

// withinMargin judges a ">=" or "<=" condition whose interval (CI95)
// straddles its threshold by the margin Indifference around it, as an
// equivalence test: an interval that leaves the finding's side by no more
// than the margin "holds within the margin" (reproduced); one that reaches
// past the threshold on the finding's side by no more than the margin
// "does not hold by more than the margin" (not reproduced). An interval
// wider than the margin on both sides stays inconclusive; so does a
// condition without a margin or on a range.
func (c Condition) withinMargin() (Reproduction, string) {
	m := c.Indifference
	if m <= 0 || c.CI95 == nil || c.Op == "between" {
		return Inconclusive, ""
	}
	lo, hi := c.CI95[0], c.CI95[1]
	holds, bounded := lo >= c.Threshold-m, hi <= c.Threshold+m
	if c.Op == "<=" {
		holds, bounded = hi <= c.Threshold+m, lo >= c.Threshold-m
	}
	switch {
	case holds:
		return Reproduced, "holds within the margin"
	case bounded:
		return NotReproduced, "does not hold by more than the margin"
	}
	return Inconclusive, ""
}

// settledWords is how the repeats ended, for the verdict's lines ("" for a
// verdict of a fixed number of repeats).
func (v *Verdict) settledWords() string {
	if v.Settle == nil {
		return ""
	}
	return fmt.Sprintf("%s (budget %s; %s)", v.Settle.Words, v.Settle.Budget, v.Settle.Rate)
}
