package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/settle"
	"github.com/throttlelab/throttlelab/verdict"
)

// Settle are the options of repeats until settled (UntilSettled).
type Settle struct {
	// Rule is the stopping rule (settle.Default).
	Rule settle.Rule
	// Budget is the time every look together may take, the first
	// included: a look that cannot finish within it, predicted from the
	// slowest repeat so far, is not started.
	Budget time.Duration
	// Continue goes on in Dir from where an earlier round stopped for its
	// budget, on the same schedule (verdict.Settling's First and Next):
	// the next look runs whatever the budget, the ones after it only if
	// they fit. The looks stay the schedule's, so the rule's rate holds
	// over both rounds together.
	Continue bool
}

// ErrCannotContinue is UntilSettled's error for Settle.Continue in a
// directory whose repeats did not stop for their budget: a stop for any
// other reason is the rule's, and more looks would spend its rate again.
var ErrCannotContinue = errors.New("cannot continue the repeats")

// settleMost is the most repeats e's last look may have.
func settleMost(e *experiment.Experiment) int {
	per := len(e.Spec.Configs) * len(e.Spec.Loads)
	return min(MaxSettleRepeats, experiment.MaxRepeats, experiment.MaxRuns/max(per, 1))
}

// CheckContinue says, before anything runs, whether Settle.Continue with
// rule r can go on with e in dir: nil, or an error wrapping
// ErrCannotContinue that says why not.
func CheckContinue(dir string, e *experiment.Experiment, r settle.Rule) error {
	_, _, err := resumeLooks(dir, r, settleMost(e))
	return err
}

// resumeLooks are the looks of an earlier round in dir, as the schedule
// had them (their widths and times are not kept, so the stall rule and the
// budget start afresh), and the schedule's first repeats.
func resumeLooks(dir string, r settle.Rule, most int) ([]settle.Look, int, error) {
	v := record.ReadVerdict(dir)
	switch {
	case v == nil || v.Settle == nil:
		return nil, 0, fmt.Errorf("%w: %s holds no verdict of repeats until settled (settle it first)", ErrCannotContinue, dir)
	case v.Settle.Reason != string(settle.Budget):
		return nil, 0, fmt.Errorf("%w: %s stopped for %q, not for its budget", ErrCannotContinue, dir, v.Settle.Reason)
	case v.Settle.First < 1:
		return nil, 0, fmt.Errorf("%w: %s does not say its schedule's first look (made by an older throttlelab): run it again", ErrCannotContinue, dir)
	}
	schedule := r.Schedule(min(v.Settle.First, most), most)
	n := v.Settle.Looks
	if n < 1 || n >= len(schedule) || schedule[n-1] != v.Settle.Repeats {
		return nil, 0, fmt.Errorf("%w: %s's %d looks at %d repeats are not on the schedule %v", ErrCannotContinue, dir, n, v.Settle.Repeats, schedule)
	}
	looks := make([]settle.Look, n)
	for i := range looks {
		looks[i] = settle.Look{Repeats: schedule[i]}
	}
	return looks, v.Settle.First, nil
}

// ErrNoCheck is UntilSettled's error for an experiment without a check:
// there is nothing to settle.
var ErrNoCheck = errors.New("no check to settle")

// MaxSettleRepeats caps the repeats of the last look.
const MaxSettleRepeats = verdict.MaxRepeatsEstimate

// UntilSettled runs e as Run does, then adds repeats while any condition of
// its preset's check is inconclusive at the stopping rule's level, on the
// rule's schedule (the spec's repeats first: under settle.MinJudge a pilot
// look that only measures what a repeat costs), until the check settles, the
// intervals stop shrinking, the schedule ends or the next look would not
// fit in the budget. Only the last look prints the verdict, table and
// report; each look writes a line to Log. The verdict (verdict.json, the
// summary, the report) is judged at the rule's level and says how many
// repeats it took and why it stopped (verdict.Settling); spec.yaml says
// the repeats run. opt.Judge must be set (ErrNoCheck).
func UntilSettled(ctx context.Context, e *experiment.Experiment, b Backend, opt Options, s Settle) (*Outcome, error) {
	if opt.Judge == nil {
		return &Outcome{Total: len(e.Runs())}, ErrNoCheck
	}
	r := s.Rule
	most := settleMost(e)
	first := min(max(e.Spec.Repeats, 1), most)
	var looks []settle.Look
	if s.Continue {
		var err error
		if looks, first, err = resumeLooks(opt.Dir, r, most); err != nil {
			return &Outcome{Total: len(e.Runs())}, err
		}
	}
	schedule := r.Schedule(first, most)
	quiet := opt
	quiet.Out, quiet.Report, quiet.Live = nil, nil, false
	quiet.settleLevel = r.Level()
	var out *Outcome
	for {
		k := len(looks)
		e.Spec.Repeats = schedule[k]
		look := quiet
		if k > 0 {
			look.Resume, look.Header = true, ""
			// A resumed directory keeps its spec: say how many repeats it has now.
			if err := record.WriteSpec(opt.Dir, e); err != nil {
				return out, err
			}
		}
		start := time.Now()
		o, err := Run(ctx, e, b, look)
		if err != nil {
			return o, err
		}
		out = o
		took := time.Since(start)
		v, ok := out.Summary.Verdict.(*verdict.Verdict)
		if !ok {
			return out, fmt.Errorf("%s: the check gave no verdict to settle", opt.Dir)
		}
		open, err := v.JudgeAt(r.Level())
		if err != nil {
			return out, err
		}
		added := e.Spec.Repeats
		if k > 0 {
			added = e.Spec.Repeats - looks[k-1].Repeats
		}
		looks = append(looks, settle.Look{Repeats: e.Spec.Repeats, Open: open, Took: took, Added: added})
		d := r.Decide(looks, schedule, s.Budget)
		if v.Disturbed != "" && !v.SelfCheck {
			d = settle.Decision{Stop: true, Reason: settle.Disturbed}
		}
		if d.Stop {
			st := &verdict.Settling{Level: r.Level(), Rate: r.Rate(), Looks: len(looks), Repeats: e.Spec.Repeats,
				Reason: string(d.Reason), Words: settle.Words(d.Reason, e.Spec.Repeats), Budget: s.Budget.String(), First: first}
			if d.Reason == settle.Budget {
				st.Next = schedule[len(looks)]
			}
			fmt.Fprintf(opt.Log, "look %d: %d repeats, %s: %s\n", len(looks), e.Spec.Repeats, openWords(open), st.Words)
			final := opt
			final.settleLevel, final.settling = r.Level(), st
			return out, finish(e, out, true, final)
		}
		var spent time.Duration
		for _, l := range looks {
			spent += l.Took
		}
		fmt.Fprintf(opt.Log, "look %d: %d repeats, %s at %.4g%%: %d more repeats (%s of the %s budget spent)\n",
			len(looks), e.Spec.Repeats, openWords(open), 100*r.Level(), d.Next-e.Spec.Repeats, spent.Round(time.Second), s.Budget)
	}
}

// openWords says how many conditions a look left open.
func openWords(open map[int]float64) string {
	if len(open) == 1 {
		return "1 condition inconclusive"
	}
	return fmt.Sprintf("%d conditions inconclusive", len(open))
}
