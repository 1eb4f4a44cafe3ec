package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/internal/progress"
	"github.com/throttlelab/throttlelab/local"
	"github.com/throttlelab/throttlelab/presets"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/report"
	"github.com/throttlelab/throttlelab/runner"
	"github.com/throttlelab/throttlelab/sim"
)

type runFlags struct {
	out    string
	resume string
	binary string
	quick  bool
	dryRun bool
	k8s    runK8sFlags
	settle settleFlags
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run SPEC.yaml|PRESET",
		Short: "Run an experiment with real processes in real cgroups (needs root)",
		Long: `Run an experiment: for each run, make cgroups with the config's CPU settings,
start the server instances (and neighbours) inside them, drive the load, sample
CPU use every 10 ms, read cpu.stat, stop everything and remove the groups.
Results go to results/NAME/TIMESTAMP (or --out) as each run finishes; an
interrupted experiment is finished with --resume DIR.

A preset (throttlelab presets lists them) runs at its original scale, or with
--quick scaled to this machine in a few minutes; its check is computed from
the measurements, printed, written to verdict.json and shown in the report.

--until-settled --budget D adds repeats to a preset while any condition of
its check is inconclusive, judged at a stopping rule's level so that the
false-verdict rate stays at most 5% per condition over every look, until
the check settles, the intervals stop shrinking or D is spent; the verdict
says how many repeats it took and why it stopped (docs/methodology.md).`,
		Example: `  sudo throttlelab run examples/limits.yaml
  sudo throttlelab run f09-burn-flow --quick
  sudo throttlelab run --resume results/limits/20261121-101500
  sudo throttlelab run f04-single-thread --quick --until-settled --budget 10m`,
		RunE: func(cmd *cobra.Command, args []string) error { return runRun(cmd, f, args) },
	}
	cmd.Flags().StringVar(&f.out, "out", "", "results directory (default results/NAME/TIMESTAMP)")
	cmd.Flags().StringVar(&f.resume, "resume", "", "finish the experiment in this results directory")
	cmd.Flags().StringVar(&f.binary, "binary", "", "throttlelab binary for the instances (default: this one)")
	cmd.Flags().BoolVar(&f.quick, "quick", false, "run a preset scaled to this machine (a few minutes)")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "check the experiment and show what would run (as throttlelab validate), and stop")
	addRunK8sFlags(cmd, &f.k8s)
	addSettleFlags(cmd.Flags(), &f.settle)
	return cmd
}

func runRun(cmd *cobra.Command, f runFlags, args []string) error {
	backend, err := f.k8s.resolve(cmd, f.resume)
	if err != nil {
		return err
	}
	e, pi, err := runTarget(cmd, f, args, backend)
	if e == nil || err != nil {
		return err // or done: a dry run, or a simulation instead
	}
	dir := cmp.Or(f.resume, f.out, newResultsDir(e.Metadata.Name, ""))
	_, statErr := os.Stat(dir)
	made := errors.Is(statErr, fs.ErrNotExist) // this command makes dir
	if f.resume == "" {
		if err := pi.Write(dir); err != nil {
			return err
		}
	}
	bin, err := binaryOr(f.binary)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	ro := runOptions(cmd, dir, f.resume != "", pi, f.settle)
	ro.Header = fmt.Sprintf("experiment %s: %d runs (%d configs x %d loads x %d repeats, %s) -> %s",
		e.Metadata.Name, len(e.Runs()), len(e.Spec.Configs), len(e.Spec.Loads), e.Spec.Repeats, e.Spec.Order, dir)
	var b runner.Backend = local.New(local.Options{Binary: bin, Log: cmd.ErrOrStderr()})
	if backend == "kubernetes" {
		if b, err = f.k8s.k8sBackend(cmd); err != nil {
			return err
		}
	} else if err := f.k8s.checkLocal(cmd); err != nil {
		return err
	}
	res, runErr := runner.Run(cmd.Context(), e, b, ro)
	switch {
	case runErr == nil:
		fmt.Fprintf(out, "results in %s\n", dir)
		return nil
	case errors.Is(runErr, context.Canceled) || cmd.Context().Err() != nil:
		fmt.Fprintf(out, "interrupted: %d of %d runs finished and kept; finish with: throttlelab run --resume %s\n", len(res.Runs), res.Total, dir)
		return exitError{code: ExitInterrupted, err: errors.New("interrupted")}
	case len(res.Runs) == 0:
		// Nothing was measured: say so, and leave no empty results behind.
		if made {
			os.RemoveAll(dir)
		}
		return fmt.Errorf("%w (the experiment failed before its first run finished: nothing was measured)", runErr)
	}
	return fmt.Errorf("%w (finished runs are kept in %s; finish with --resume)", runErr, dir)
}

// runTarget is the experiment run runs, and its preset's info: the one in
// --resume's directory, or the argument's. A nil experiment and error mean
// the command is done: --dry-run described it, or a preset that needs CPU
// burst on a kernel without it was simulated instead.
func runTarget(cmd *cobra.Command, f runFlags, args []string, backend string) (*experiment.Experiment, *presets.Info, error) {
	resume := ""
	if f.resume != "" {
		resume = "--resume"
	}
	if _, err := f.settle.options(resume); err != nil {
		return nil, nil, err
	}
	switch {
	case f.resume != "" && len(args) > 0:
		return nil, nil, usagef("give a SPEC or --resume DIR, not both")
	case f.resume != "" && f.dryRun:
		return nil, nil, usagef("--dry-run checks a SPEC or PRESET: give one, not --resume")
	case f.resume != "":
		e, err := record.ReadSpec(f.resume)
		if err != nil {
			return nil, nil, usagef("--resume %s: %v", f.resume, err)
		}
		if err := f.settle.checkContinue(f.resume, e); err != nil {
			return nil, nil, err
		}
		pi, err := presets.ReadInfo(f.resume)
		return e, pi, err
	case len(args) != 1:
		return nil, nil, usagef("give an experiment spec (SPEC.yaml), a preset (throttlelab presets) or --resume DIR")
	}
	cores, err := orHostCores(0)
	if err != nil {
		return nil, nil, err
	}
	e, pi, err := specOf(args[0], f.quick, cores)
	if err != nil {
		return nil, nil, err
	}
	if err := e.CheckCPUs(cores); err != nil && backend == "local" {
		return nil, nil, usageError{fmt.Errorf("%w: simulate it with throttlelab sim --cores %d", err, maxCPUOf(e)+1)}
	}
	if f.dryRun {
		printWarnings(cmd, e)
		return nil, nil, describe(cmd.OutOrStdout(), e, args[0], cores)
	}
	if p, ok := presets.Lookup(args[0]); ok && p.NeedsBurst {
		if ok, _ := cgroup.BurstSupported("/"); !ok {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s needs CPU burst (cpu.cfs_burst_us or cpu.max.burst, Linux 5.14+), which this kernel does not have: simulating it instead\n", p.Name)
			return nil, nil, runSim(cmd, simFlags{out: f.out, quick: f.quick, settle: f.settle, cores: cores, nsPerIteration: sim.DefaultCosts().NsPerIteration, seed: -1}, args)
		}
	}
	printWarnings(cmd, e) // the simulation above prints its own
	return e, pi, f.settle.checkSettled(pi, args[0])
}

// newResultsDir names a fresh results directory, results/NAME/[PREFIX]TIMESTAMP,
// with -2, -3... when one of that second exists (a simulation takes less).
func newResultsDir(name, prefix string) string {
	base := filepath.Join("results", name, prefix+time.Now().Format("20060102-150405"))
	dir := base
	for i := 2; ; i++ {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return dir
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
}

// runOptions are the runner's options for a results directory, as run and
// sim set them: progress to stderr, the table (coloured on a terminal), the
// verdict of a preset and the report to stdout; with --until-settled
// (checked already), repeats until the check settles.
func runOptions(cmd *cobra.Command, dir string, resume bool, pi *presets.Info, sf settleFlags) runner.Options {
	color := progress.IsTerminal(cmd.OutOrStdout())
	opt := runner.Options{Dir: dir, Resume: resume, Version: Version, Log: cmd.ErrOrStderr(), Live: progress.IsTerminal(cmd.ErrOrStderr()),
		Out: cmd.OutOrStdout(), Color: color, Table: report.WriteRows,
		Report: func(dirs []string, held []*record.Run) (runner.Report, error) {
			s, err := report.ReadSet(dirs, held...)
			if err != nil {
				return nil, err
			}
			s.Color, s.Sections = color, []report.Section{report.AdviceSection}
			return s, nil
		}}
	if pi != nil {
		opt.Judge = pi
	}
	opt.Settle = sf.settledFor(resume)
	return opt
}
