package verdict

import (
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/settle"
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

// TestJudgeAtLastLook judges F14's kind of condition (p99 ratio >= 0.9,
// indifference 0.05) at the rule's last look on per-repeat values whose
// interval straddles the threshold: with the margin it ends in a verdict
// ("does not hold by more than the margin" below, "holds within the
// margin" above), one wider than the margin on both sides stays
// inconclusive, a look before the last stays inconclusive (every one
// not reproduced with the run's reading as its why), and a prior
// that matches the spread pools and says so in the cell.
func TestJudgeAtLastLook(t *testing.T) {
	const level = 0.9818
	mk := func(per []float64, reason string, prior *settle.Prior) *Verdict {
		mean := 0.0
		for _, x := range per {
			mean += x / float64(len(per))
		}
		c := Condition{Name: "p99 pinned / shared", Value: mean, Op: ">=", Threshold: 0.9, Indifference: 0.05, PerRepeat: per, Draws: per, Prior: prior}
		v := &Verdict{Conditions: []Condition{c}, Repeats: len(per), Reading: "the run's reading"}
		if reason != "" {
			v.Settle = &Settling{Reason: reason, Repeats: len(per), Words: settle.Words(settle.Reason(reason), len(per))}
		}
		return v
	}
	below := []float64{0.83, 0.91, 0.86, 0.89, 0.82, 0.87, 0.90, 0.88} // mean 0.87, interval about [0.835, 0.905]: hi under 0.95
	above := []float64{0.93, 0.99, 0.89, 0.95, 0.97, 0.92, 0.96, 0.88} // mean 0.936, interval about [0.89, 0.98]: lo over 0.85
	wide := []float64{0.5, 1.3, 0.9, 0.7, 1.1, 0.6, 1.2, 0.9}
	for _, c := range []struct {
		name   string
		per    []float64
		reason string
		want   Reproduction
		words  string
	}{
		{"below, last look", below, string(settle.LastLook), NotReproduced, "does not hold by more than the margin"},
		{"above, stalled", above, string(settle.Stalled), Reproduced, "holds within the margin"},
		{"wide, last look", wide, string(settle.LastLook), Inconclusive, ""},
		{"below, mid-schedule", below, "", Inconclusive, ""},
		{"below, budget spent", below, string(settle.Budget), Inconclusive, ""},
	} {
		v := mk(c.per, c.reason, nil)
		if _, err := v.JudgeAt(level); err != nil {
			t.Fatal(err)
		}
		cd := v.Conditions[0]
		if v.Outcome != c.want || cd.WithinMargin != c.words {
			t.Errorf("%s: %q (%q) on %v, want %q (%q)", c.name, v.Outcome, cd.WithinMargin, cd.CISettle, c.want, c.words)
		}
		if want := map[bool]string{true: "", false: "the run's reading"}[v.Outcome == Reproduced]; v.Why != want {
			t.Errorf("%s: %s with why %q: a verdict not reproduced carries its reading, a reproduced one none", c.name, v.Outcome, v.Why)
		}
		if c.words != "" && (!strings.Contains(cd.String(), c.words) || !strings.Contains(v.Settle.Words, "judged with the indifference margin")) {
			t.Errorf("%s: words %q; %q", c.name, cd.String(), v.Settle.Words)
		}
	}
	// Three repeats of the spread below: inconclusive on their own (2
	// df), pooled with a prior of the same spread from 7 earlier
	// repeats the interval is far narrower, and the cell says so.
	three := below[:3]
	own := mk(three, "", nil)
	if _, err := own.JudgeAt(level); err != nil {
		t.Fatal(err)
	}
	p := &settle.Prior{SD: 0.05, DF: 6, Repeats: 7, Date: "2026-11-29"}
	pooled := mk(three, "", p)
	if _, err := pooled.JudgeAt(level); err != nil {
		t.Fatal(err)
	}
	o, q := own.Conditions[0], pooled.Conditions[0]
	if q.Pooled != "pooled with 7 earlier repeats from 2026-11-29" || !strings.Contains(q.String(), q.Pooled) || o.Pooled != "" {
		t.Errorf("pooled words %q (%q), own %q", q.Pooled, q.String(), o.Pooled)
	}
	if w, ow := q.CISettle[1]-q.CISettle[0], o.CISettle[1]-o.CISettle[0]; w > ow/2 {
		t.Errorf("pooled interval %v not under half the own %v", *q.CISettle, *o.CISettle)
	}
}

// TestJudgeAtLogScale judges F8's kind of ratio (15.5x against >= 1.5 from
// three per-repeat ratios that spread with their size) at the rule's
// level: on the linear scale its t interval reaches below zero and is
// inconclusive; on the log scale (LogScale) it is the back-transformed t
// interval of the logs, all above 1.5, and reproduced. A prior of the
// other scale is not pooled; one of logs is.
func TestJudgeAtLogScale(t *testing.T) {
	const level = 0.9818
	per := []float64{12, 15.5, 30}
	mk := func(log bool, prior *settle.Prior) *Verdict {
		c := Condition{Name: "mean smallest limit / unlimited", Value: 15.5, Op: ">=", Threshold: 1.5, PerRepeat: per, LogScale: log, Prior: prior}
		return &Verdict{Conditions: []Condition{c}, Repeats: 3}
	}
	v := mk(false, nil)
	if _, err := v.JudgeAt(level); err != nil || v.Outcome != Inconclusive || v.Conditions[0].CISettle[0] > 0 {
		t.Fatalf("linear: %q on %v (%v), want inconclusive reaching below zero", v.Outcome, v.Conditions[0].CISettle, err)
	}
	v = mk(true, nil)
	if _, err := v.JudgeAt(level); err != nil || v.Outcome != Reproduced {
		t.Fatalf("log scale: %q on %v (%v), want reproduced", v.Outcome, v.Conditions[0].CISettle, err)
	}
	// exp(mean of logs +- t(2) s/sqrt(3)): the geometric mean 17.7 inside.
	iv := *v.Conditions[0].CISettle
	if !(iv[0] > 1.5 && iv[0] < 12 && iv[1] > 30 && iv[1] < 200) || !strings.Contains(v.Conditions[0].String(), "on the log scale") {
		t.Errorf("log-scale interval %v (%s)", iv, v.Conditions[0])
	}
	linear := &settle.Prior{SD: 0.1, DF: 20, Repeats: 24, Date: "2026-11-29"}
	v = mk(true, linear)
	if v.JudgeAt(level); v.Conditions[0].Pooled != "" {
		t.Errorf("a linear prior pooled with logs: %q", v.Conditions[0].Pooled)
	}
	logs := *linear
	logs.SD, logs.Scale = 0.8, settle.LogScale
	v = mk(true, &logs)
	if v.JudgeAt(level); !strings.HasPrefix(v.Conditions[0].Pooled, "pooled with 24") || v.Outcome != Reproduced {
		t.Errorf("a prior of logs: %q, %q", v.Conditions[0].Pooled, v.Outcome)
	}
	// A ratio with a value not above zero falls back to the linear scale.
	v = mk(true, nil)
	v.Conditions[0].PerRepeat = []float64{-1, 15.5, 31}
	if v.JudgeAt(level); v.Conditions[0].CISettle == nil || v.Conditions[0].CISettle[0] > 0 {
		t.Errorf("a ratio with a negative value: %v, want the linear interval", v.Conditions[0].CISettle)
	}
}
