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
	per := len(e.Spec.Configs) * len(e.Spec.Loads)
	most := min(MaxSettleRepeats, experiment.MaxRepeats, experiment.MaxRuns/max(per, 1))
	schedule := r.Schedule(min(max(e.Spec.Repeats, 1), most), most)
	quiet := opt
	quiet.Out, quiet.Report, quiet.Live = nil, nil, false
	quiet.settleLevel = r.Level()
	var looks []settle.Look
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
				Reason: string(d.Reason), Words: settle.Words(d.Reason, e.Spec.Repeats), Budget: s.Budget.String()}
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
