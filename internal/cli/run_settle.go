package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/presets"
	"github.com/throttlelab/throttlelab/runner"
	"github.com/throttlelab/throttlelab/settle"
	"github.com/throttlelab/throttlelab/units"
)

// settleFlags are run's and sim's --until-settled and --budget.
type settleFlags struct {
	untilSettled bool
	budget       string
	// rule is the stopping rule (zero: settle.Default); sim sets
	// settle.Long.
	rule settle.Rule
}

// maxBudget bounds --budget: a week of repeats is a mistake, not a plan.
const maxBudget = 7 * 24 * time.Hour

func addSettleFlags(fs *pflag.FlagSet, f *settleFlags) {
	fs.BoolVar(&f.untilSettled, "until-settled", false, "add repeats until every condition of the preset's check is conclusive, or --budget is spent (a sequential rule: false-verdict rate at most 5% per condition)")
	fs.StringVar(&f.budget, "budget", "", "time the repeats of --until-settled may take in all, such as 10m or 30s (needed with --until-settled)")
}

// options checks the flags (before anything runs) and returns the
// settling's options: nil without --until-settled. other names a flag
// given that --until-settled does not go with ("" for none), except
// --resume: then the repeats continue a directory whose earlier round
// stopped for its budget (checkContinue).
func (f settleFlags) options(other string) (*runner.Settle, error) {
	if !f.untilSettled {
		if f.budget != "" {
			return nil, usagef("--budget %s: it is the time of --until-settled: give both, or neither", f.budget)
		}
		return nil, nil
	}
	if other != "" && other != "--resume" {
		return nil, usagef("--until-settled adds repeats to a new run of a preset, or with --resume to one that stopped for its budget: leave out %s", other)
	}
	if f.budget == "" {
		return nil, usagef("--until-settled needs --budget, the time the repeats may take in all (such as --budget 10m)")
	}
	d, err := units.ParseDuration(f.budget)
	if err != nil {
		return nil, usagef("--budget %v", err)
	}
	if err := units.CheckDuration("--budget", d, time.Second, maxBudget); err != nil {
		return nil, usagef("%v", err)
	}
	return &runner.Settle{Rule: f.theRule(), Budget: d}, nil
}

// settled is the settling's options of flags options has checked.
func (f settleFlags) settled() *runner.Settle {
	s, _ := f.options("")
	return s
}

// checkSettled refuses --until-settled for an experiment without a check
// (a spec file rather than a preset).
func (f settleFlags) checkSettled(pi *presets.Info, arg string) error {
	if f.untilSettled && pi == nil {
		return usagef("--until-settled settles a preset's check: %s has none (give a preset: throttlelab presets lists them)", arg)
	}
	return nil
}

// checkContinue refuses, before anything runs, --until-settled with
// --resume DIR when DIR's repeats did not stop for their budget (or were
// not run until settled): more looks there would spend the rule's rate
// again.
func (f settleFlags) checkContinue(dir string, e *experiment.Experiment) error {
	if !f.untilSettled {
		return nil
	}
	if err := runner.CheckContinue(dir, e, f.theRule()); err != nil {
		return usagef("--resume %s --until-settled: %v", dir, err)
	}
	return nil
}

// settledFor is the settling's options of flags options has checked, for
// a new run or (resume) one continued in its directory.
func (f settleFlags) settledFor(resume bool) *runner.Settle {
	s := f.settled()
	if s != nil {
		s.Continue = resume
	}
	return s
}

// theRule is the stopping rule of these flags: settle.Default (run's)
// unless the command set another (sim's settle.Long).
func (f settleFlags) theRule() settle.Rule {
	if f.rule.MaxLooks > 0 {
		return f.rule
	}
	return settle.Default
}
