package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/presets"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/settle"
	"github.com/throttlelab/throttlelab/verdict"
)

// judged is one row judged again: the stored verdict and this build's.
type judged struct {
	name     string
	old, now *verdict.Verdict
	// perRepeat is what a repeat of the stored run took.
	perRepeat time.Duration
}

// rejudgeAll judges the stored measured run of every preset in dir again
// (dir/PRESET, as make reproduce writes them) with this build's checks
// and stopping rule and the priors sets (nil: this build's), running and writing nothing: each row's
// stored verdict with this build's beside it. A stored run that stopped
// for the rule (its last look, stalled) keeps that reason, so the margin
// judges it as it did; one that stopped for its budget is judged at the
// repeats it had.
func rejudgeAll(dir string, sets []presets.Priors) ([]judged, error) {
	var out []judged
	for _, p := range presets.All() {
		d := filepath.Join(dir, p.Name)
		old := record.ReadVerdict(d)
		if old == nil {
			continue
		}
		scaled := ""
		if info, err := presets.ReadInfo(d); err == nil && info != nil {
			scaled = info.Scaled
		}
		now, err := p.Rejudge(d, scaled, sets)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d, err)
		}
		if old.Settle != nil {
			st := *old.Settle
			rule := settle.Default
			st.Level, st.Rate = rule.Level(), rule.Rate()
			now.Settle = &st
			if _, err := now.JudgeAt(rule.Level()); err != nil {
				return nil, fmt.Errorf("%s: %w", d, err)
			}
			if now.Outcome == verdict.Inconclusive && st.Reason == string(settle.Settled) {
				// Settled under the old rule, not under this one: the
				// stored run would have gone on.
				st.Words = fmt.Sprintf("judged again at %d repeats: still inconclusive", st.Repeats)
			}
		}
		out = append(out, judged{name: p.Name, old: old, now: now, perRepeat: perRepeatOf(load(d))})
	}
	return out, nil
}

// printRejudged writes the rows judged again: per row the outcome stored
// and now, each condition's interval then and now (and a ratio's linear
// interval without a prior, to tell the log scale's part from the
// priors'), and for a row still
// inconclusive the repeats that would likely settle it and what they
// would cost at the stored run's time per repeat; then the counts.
func printRejudged(w io.Writer, dir string, rows []judged) {
	count := func(get func(judged) *verdict.Verdict) map[verdict.Reproduction]int {
		m := map[verdict.Reproduction]int{}
		for _, r := range rows {
			m[get(r).Outcome]++
		}
		return m
	}
	var more, onSchedule time.Duration
	fmt.Fprintf(w, "the stored runs in %s judged again with this build's rule (%s):\n", dir, settle.Default.Rate())
	for _, r := range rows {
		fmt.Fprintf(w, "%s %s (%d repeats, %s a repeat): stored %s, now %s\n", r.now.Finding, r.name, r.now.Repeats, r.perRepeat.Round(time.Second), r.old.Outcome, r.now.Outcome)
		for i, c := range r.now.Conditions {
			if i < len(r.old.Conditions) {
				fmt.Fprintf(w, "  stored: %s\n", strings.TrimSpace(r.old.Conditions[i].String()))
			}
			fmt.Fprintf(w, "  now:    %s\n", c)
			if c.LogScale && r.now.Settle != nil {
				// The same ratios on the linear scale without a prior:
				// what the log scale alone changed.
				if iv, ok := settle.RepeatInterval(c.PerRepeat, c.Value, r.now.Settle.Level); ok {
					fmt.Fprintf(w, "  linear: [%.3g, %.3g], the t interval of the ratios themselves without a prior\n", iv[0], iv[1])
				}
			}
		}
		if r.now.Outcome == verdict.Inconclusive && r.now.RepeatsNeeded > 0 && r.now.Disturbed == "" {
			extra := r.perRepeat * time.Duration(max(r.now.RepeatsNeeded-r.now.Repeats, 0))
			more += extra
			line := fmt.Sprintf("  needs: %s would likely settle it, %s more at %s a repeat", r.now.RepeatsWords(), extra.Round(time.Second), r.perRepeat.Round(time.Second))
			if st := r.now.Settle; st != nil && st.First > 0 {
				at := lookFor(st.First, r.now.RepeatsNeeded)
				look := r.perRepeat * time.Duration(max(at-r.now.Repeats, 0))
				onSchedule += look
				line += fmt.Sprintf("; its schedule's look at %d repeats: %s more", at, look.Round(time.Second))
			}
			fmt.Fprintln(w, line)
		}
	}
	o, n := count(func(r judged) *verdict.Verdict { return r.old }), count(func(r judged) *verdict.Verdict { return r.now })
	fmt.Fprintf(w, "stored: %d reproduced, %d not reproduced, %d inconclusive; now: %d reproduced, %d not reproduced, %d inconclusive, about %s more to settle the inconclusive ones (%s to the looks of their schedules that cover it)\n",
		o[verdict.Reproduced], o[verdict.NotReproduced], o[verdict.Inconclusive], n[verdict.Reproduced], n[verdict.NotReproduced], n[verdict.Inconclusive], more.Round(time.Second), onSchedule.Round(time.Second))
}
