package runner

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/settle"
	"github.com/throttlelab/throttlelab/verdict"
)

// shrinking is a judge whose one condition, 1.2 against a threshold of 1,
// has draws spread as spread/sqrt(repeats). At 99.375%, widened by
// settle.Widen (sqrt(n/(n-1)) t(n-1)/z: 1.34 at 12 repeats, 1.2 at 18),
// spread 0.6 is conclusive from 18 repeats on, the sixth look of
// settle.Default's schedule for the test spec's two repeats (a pilot at
// 2, then 3, 5, 8, 12, 18, ...); spread 0.1 (5.6 at 3 repeats, 2.3 at 5)
// from 5, the third.
type shrinking struct{ spread float64 }

func (j shrinking) Judge(dir string, s *record.ExperimentSummary) (Verdict, error) {
	n := s.Configs[0].Repeats
	half := j.spread / math.Sqrt(float64(n))
	draws := make([]float64, 1000)
	for i := range draws {
		draws[i] = 1.2 + half*(2*float64(i)/999-1)
	}
	v := &verdict.Verdict{Preset: "fake", Finding: "F0", Repeats: n,
		Conditions: []verdict.Condition{{Name: "ratio", Value: 1.2, Op: ">=", Threshold: 1, Draws: draws}}}
	iv, _ := settle.Interval(draws, 1.2, 0.95)
	v.Conditions[0].CI95 = &iv
	out, need, err := verdict.Combine(v.Conditions, n)
	v.Outcome, v.Reproduced, v.RepeatsNeeded = out, out == verdict.Reproduced, need
	return v, err
}

// TestUntilSettled adds repeats on the rule's schedule until the check
// settles, runs each repeat once, prints the verdict once, and leaves a
// results directory whose spec, runs and verdict agree on the repeats.
func TestUntilSettled(t *testing.T) {
	for _, c := range []struct {
		name    string
		spread  float64
		repeats int
		reason  settle.Reason
	}{
		{"settles at the sixth look", 0.6, 18, settle.Settled},
		// The pilot look at 1 repeat judges nothing, and 3 is too few
		// for a 0.2 margin once widened.
		{"settles at the third look", 0.1, 5, settle.Settled},
		// Never narrower than 2.4 wide around 1.2 at 99.375%: the spread
		// shrinks as 1/sqrt(n), but not fast enough within the schedule
		// to settle, and by 10% over two looks, so it runs to the end.
		{"last look", 50, 62, settle.LastLook},
	} {
		e, dir := load(t), t.TempDir()
		b := &fake{}
		var out, log bytes.Buffer
		res, err := Run(context.Background(), e, b, Options{Dir: dir, Judge: shrinking{c.spread}, Out: &out, Log: &log,
			Settle: &Settle{Rule: rule8, Budget: time.Hour}})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		v := record.ReadVerdict(dir)
		if v == nil || v.Settle == nil {
			t.Fatalf("%s: verdict.json %+v without settling", c.name, v)
		}
		if v.Settle.Repeats != c.repeats || v.Settle.Reason != string(c.reason) || v.Repeats != c.repeats {
			t.Errorf("%s: settled %+v (verdict from %d repeats), want %s after %d", c.name, v.Settle, v.Repeats, c.reason, c.repeats)
		}
		if (c.reason == settle.Settled) != (v.Outcome == verdict.Reproduced) {
			t.Errorf("%s: outcome %q after %s", c.name, v.Outcome, v.Settle.Reason)
		}
		seen := map[string]int{}
		for _, id := range b.ran {
			seen[id]++
		}
		if len(b.ran) != 2*c.repeats || len(seen) != len(b.ran) || len(res.Runs) != len(b.ran) {
			t.Errorf("%s: %d runs asked of the backend, %d distinct, %d in the outcome; want %d, each once", c.name, len(b.ran), len(seen), len(res.Runs), 2*c.repeats)
		}
		if e2, err := record.ReadSpec(dir); err != nil || e2.Spec.Repeats != c.repeats {
			t.Errorf("%s: spec.yaml repeats %v (%v), want %d", c.name, e2, err, c.repeats)
		}
		if n := strings.Count(out.String(), "F0 "); n < 1 || !strings.HasPrefix(out.String(), "F0 ") || strings.Count(out.String(), v.Settle.Words) < 1 {
			t.Errorf("%s: stdout %q: want the verdict first, once, saying %q", c.name, out.String(), v.Settle.Words)
		}
		if looks := strings.Count("\n"+log.String(), "\nlook "); looks != v.Settle.Looks {
			t.Errorf("%s: %d look lines on the log, %d looks", c.name, looks, v.Settle.Looks)
		}
	}
}

// TestUntilSettledNeedsACheck refuses an experiment without a judge.
func TestUntilSettledNeedsACheck(t *testing.T) {
	_, err := Run(context.Background(), load(t), &fake{}, Options{Dir: t.TempDir(), Settle: &Settle{Rule: rule8, Budget: time.Hour}})
	if err != ErrNoCheck {
		t.Errorf("no judge: %v, want ErrNoCheck", err)
	}
}

// TestUntilSettledContinues stops a first round for its budget after the
// first judging look (a pilot look always goes on to it), then continues in the same directory on the same schedule:
// the second round runs only the new repeats and settles where one round
// with time would have (18 repeats for spread 0.6, the sixth look).
func TestUntilSettledContinues(t *testing.T) {
	e, dir := load(t), t.TempDir()
	first := &fake{}
	var out, log bytes.Buffer
	if _, err := Run(context.Background(), e, first, Options{Dir: dir, Judge: shrinking{0.6}, Out: &out, Log: &log,
		Settle: &Settle{Rule: rule8, Budget: time.Nanosecond}}); err != nil {
		t.Fatal(err)
	}
	v := record.ReadVerdict(dir)
	if v == nil || v.Settle == nil || v.Settle.Reason != string(settle.Budget) || v.Settle.First != 2 || v.Settle.Repeats != 3 || v.Settle.Next != 5 {
		t.Fatalf("first round: settling %+v, want a stop for the budget after the first judging look, first 2 (the spec's), 3 repeats, next 5", v.Settle)
	}
	e2, err := record.ReadSpec(dir)
	if err != nil {
		t.Fatal(err)
	}
	second := &fake{}
	if _, err := Run(context.Background(), e2, second, Options{Dir: dir, Resume: true, Judge: shrinking{0.6}, Out: &out, Log: &log,
		Settle: &Settle{Rule: rule8, Budget: time.Hour, Continue: true}}); err != nil {
		t.Fatal(err)
	}
	v = record.ReadVerdict(dir)
	if v.Settle.Reason != string(settle.Settled) || v.Settle.Repeats != 18 || v.Settle.Looks != 6 || v.Outcome != verdict.Reproduced {
		t.Errorf("second round: settling %+v, outcome %q; want settled after 18 repeats at the sixth look", v.Settle, v.Outcome)
	}
	if len(first.ran) != 2*3 || len(second.ran) != 2*15 {
		t.Errorf("%d runs in the first round and %d in the second, want 6 and 30 (each repeat once)", len(first.ran), len(second.ran))
	}
	// A settled directory does not continue: that stop was the rule's.
	_, err = Run(context.Background(), e2, &fake{}, Options{Dir: dir, Resume: true, Judge: shrinking{0.6}, Log: &log,
		Settle: &Settle{Rule: rule8, Budget: time.Hour, Continue: true}})
	if !errors.Is(err, ErrCannotContinue) {
		t.Errorf("continuing a settled directory: %v, want ErrCannotContinue", err)
	}
}

// rule8 is the runner's tests' rule: eight looks growing by half (each at
// the Bonferroni split's 99.375%), so the schedule is long enough to show
// every way to stop; settle's own tests measure settle.Default.
var rule8 = settle.Rule{Alpha: 0.05, MaxLooks: 8, Growth: 1.5, Shrink: 0.9}
