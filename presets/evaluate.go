package presets

import (
	"fmt"
	"strings"

	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/verdict"
)

// Evaluate computes the preset's check from the results in dir and writes
// verdict.json there. scaled says how a quick run was scaled ("" for none).
func (p *Preset) Evaluate(dir, scaled string) (*verdict.Verdict, error) {
	return p.evaluate(dir, scaled, nil)
}

// Rejudge computes the preset's check from the results in dir as
// Evaluate does, with the checks of this build and the priors sets (nil:
// this build's), and writes nothing: a stored run judged
// again (reproduce -rejudge).
func (p *Preset) Rejudge(dir, scaled string, sets []Priors) (*verdict.Verdict, error) {
	return p.judge(dir, scaled, nil, sets)
}

// evaluate is Evaluate with dir's summary already read (nil: read it).
func (p *Preset) evaluate(dir, scaled string, s *record.ExperimentSummary) (*verdict.Verdict, error) {
	v, err := p.judge(dir, scaled, s, nil)
	if err != nil {
		return nil, err
	}
	return v, record.WriteVerdict(dir, v)
}

// judge is evaluate without writing the verdict, with the priors sets
// (nil: this build's).
func (p *Preset) judge(dir, scaled string, s *record.ExperimentSummary, sets []Priors) (*verdict.Verdict, error) {
	r, err := readResults(dir, s)
	if err != nil {
		return nil, err
	}
	// A spec changed by hand may lack a config the check reads: the check
	// says so as an error.
	conds, numbers, err := p.verdict(r)
	if err != nil {
		return nil, fmt.Errorf("preset %s: cannot check %s: %w", p.Name, dir, err)
	}
	p.attachPriors(r, conds, scaled != "", sets)
	reps := r.repeats()
	out, need, err := verdict.Combine(conds, reps)
	if err != nil {
		return nil, fmt.Errorf("preset %s: checking %s: %w", p.Name, dir, err)
	}
	v := &verdict.Verdict{Preset: p.Name, Finding: p.Finding, Source: p.Source, Claim: p.Claim, Check: p.Check, SelfCheck: p.SelfCheck,
		Outcome: out, Reproduced: out == verdict.Reproduced, Conditions: conds, Numbers: numbers,
		Repeats: reps, RepeatsNeeded: need, CIMethod: r.Summary.CIMethod, Scaled: scaled, Backend: r.Env.Backend}
	// A self-check's figures come from throttlelab's own seeded choices,
	// not from timing: other work cannot disturb them.
	if d := r.disturbed(); d != "" && !p.SelfCheck {
		v.Disturbed = d
		if out != verdict.Inconclusive {
			v.Outcome, v.Reproduced, v.RepeatsNeeded = verdict.Inconclusive, false, 0
		}
	}
	// A cell that did not pass says why from its own figures: the preset's
	// reading where it has one, then every group's throttling, run-queue
	// wait, CPUs and use (because). The stopping rule may judge another
	// outcome than the 95% one (verdict.JudgeAt), so the reading is kept
	// for it whatever the outcome here.
	var why []string
	if p.why != nil {
		if w := p.why(r); w != "" {
			why = append(why, w)
		}
	}
	if b := because(r); b != "" {
		why = append(why, b)
	}
	v.Reading = strings.Join(why, ". ")
	if v.Outcome != verdict.Reproduced {
		v.Why = v.Reading
	}
	return v, nil
}

// Line is the verdict in one line, as run and sim print it.
func Line(v *verdict.Verdict) string { return v.Line() }

// disturbed describes the runs during which other work used more than
// record.DisturbedShare of the host's CPUs ("" when none did, or the backend
// could not tell).
func (r *Results) disturbed() string {
	var ids []string
	worst := 0.0
	for _, run := range r.Runs {
		if run.Disturbed(r.Env.Cores) {
			ids = append(ids, run.ID)
			worst = max(worst, *run.HostOtherCores)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return fmt.Sprintf("other work on the host used up to %.2f of its %d cores during %d of %d runs (%s; more than %.0f%% of the machine), so the figures measured that work's interference too: run again on a quiet host",
		worst, r.Env.Cores, len(ids), len(r.Runs), strings.Join(ids, ", "), 100*record.DisturbedShare)
}
