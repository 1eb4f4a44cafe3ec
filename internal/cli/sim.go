package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/presets"
	"github.com/throttlelab/throttlelab/runner"
	"github.com/throttlelab/throttlelab/settle"
	"github.com/throttlelab/throttlelab/sim"
	"github.com/throttlelab/throttlelab/units"
)

type simFlags struct {
	quick          bool
	smt            bool
	out            string
	cores          int
	compare        string
	nsPerIteration float64
	seed           int64
	dryRun         bool
	settle         settleFlags
}

func newSimCmd() *cobra.Command {
	var f simFlags
	cmd := &cobra.Command{
		Use:   "sim SPEC.yaml|PRESET",
		Short: "Simulate an experiment (no root, any core count)",
		Long: `Run an experiment spec through a discrete-event model of a machine: per-core
run queues with weights local to each core, wake-up placement, load balancing,
and CFS bandwidth control (quota per period, 5 ms slices, throttling, burst).
It writes the same results as run (backend "sim"), so report draws both alike,
and ends with the table and report.html. The same spec and seed give the same
bytes.

--compare DIR simulates the experiment of a measured results directory on a
machine like the one it was measured on (its cores and burn speed), with the
seeds its repeats recorded (the same arrivals and picks), prints simulated
against measured per config, and writes a report with both.

A preset (throttlelab presets) is simulated at its original scale, on a
machine of its original size unless --cores says otherwise; --quick simulates
the variant scaled to this machine. Its check is computed and printed.

--until-settled --budget D adds repeats to a preset while any condition of
its check is inconclusive, judged at a stopping rule's level so that the
false-verdict rate stays at most 5% per condition over every look, until
the check settles, the intervals stop shrinking or D is spent; the verdict
says how many repeats it took and why it stopped (docs/methodology.md).`,
		Example: `  throttlelab sim examples/limits.yaml
  throttlelab sim --cores 16 examples/limits.yaml
  throttlelab sim f01-logjam
  throttlelab sim f12-weights --until-settled --budget 5m
  throttlelab sim --compare results/limits/20261121-105420`,
		RunE: func(cmd *cobra.Command, args []string) error { return runSim(cmd, f, args) },
	}
	cmd.Flags().StringVar(&f.out, "out", "", "results directory (default results/NAME/sim-TIMESTAMP, or DIR-sim with --compare)")
	cmd.Flags().IntVar(&f.cores, "cores", 0, "CPUs of the simulated machine (default: this machine's, or the measured one's with --compare)")
	cmd.Flags().StringVar(&f.compare, "compare", "", "simulate the experiment of this measured results directory and compare")
	cmd.Flags().Float64Var(&f.nsPerIteration, "ns-per-iteration", sim.DefaultCosts().NsPerIteration, "CPU cost of one Mandelbrot iteration (ns)")
	seedVar(cmd.Flags(), &f.seed, "seed of every run (default: the spec's)")
	cmd.Flags().BoolVar(&f.smt, "smt", false, "pair the CPUs as hyperthreads (0-1, 2-3, ...): two busy siblings each do 0.6 of a core's work")
	cmd.Flags().BoolVar(&f.quick, "quick", false, "simulate a preset's quick variant, scaled to --cores or this machine")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "check the experiment and show what would be simulated (as throttlelab validate), and stop")
	addSettleFlags(cmd.Flags(), &f.settle)
	f.settle.rule = settle.Long // simulated repeats are cheap: more looks
	return cmd
}

func runSim(cmd *cobra.Command, f simFlags, args []string) error {
	if err := f.check(); err != nil {
		return err
	}
	costs := sim.DefaultCosts()
	costs.NsPerIteration = f.nsPerIteration
	e, pi, replay, opt, err := simSetup(cmd, f, args, costs)
	if err != nil {
		return err
	}
	if opt.Cores, err = orHostCores(opt.Cores); err != nil {
		return err
	}
	if err := e.CheckCPUs(opt.Cores); err != nil {
		return usageError{fmt.Errorf("%w: give --cores %d or more", err, maxCPUOf(e)+1)}
	}
	if f.dryRun {
		return describe(cmd.OutOrStdout(), e, strings.Join(args, " ")+f.compare, opt.Cores)
	}
	if f.seed >= 0 {
		e.Spec.Seed = uint64(f.seed)
	}
	dir := f.dir(e.Metadata.Name, replay != nil)
	out := cmd.OutOrStdout()
	if err := pi.Write(dir); err != nil {
		return err
	}
	opt.SMT, opt.Log = f.smt, cmd.ErrOrStderr()
	ro := runOptions(cmd, dir, false, pi, f.settle)
	// What is about to happen goes to stderr with the progress: the first
	// line of stdout is the answer.
	ro.Header = fmt.Sprintf("simulating %s on %d cores: %d runs -> %s", e.Metadata.Name, opt.Cores, len(e.Runs()), dir)
	if replay != nil {
		ro.Compare = []string{f.compare}
	}
	res, err := runner.Run(cmd.Context(), e, sim.NewBackend(opt), ro)
	if err != nil {
		if errors.Is(err, context.Canceled) || cmd.Context().Err() != nil {
			fmt.Fprintf(out, "interrupted: %d of %d runs finished and kept in %s\n", len(res.Runs), res.Total, dir)
			return exitError{code: ExitInterrupted, err: errors.New("interrupted")}
		}
		return err
	}
	if replay != nil {
		fmt.Fprintln(out)
		replay.WriteComparison(out, res.Runs, dir)
	}
	fmt.Fprintf(out, "results in %s\n", dir)
	return pi.WriteAgreement(out, f.compare, dir)
}

// check refuses --ns-per-iteration and --cores out of range, and
// --until-settled or --budget misused.
func (f simFlags) check() error {
	if err := positiveFinite("ns-per-iteration", f.nsPerIteration); err != nil {
		return err
	}
	if f.cores < 0 || f.cores > units.MaxCPUs {
		return usagef("--cores %d: want 1 to %d (or leave it out)", f.cores, units.MaxCPUs)
	}
	compare := ""
	if f.compare != "" {
		compare = "--compare"
	}
	_, err := f.settle.options(compare)
	return err
}

// dir is where the simulated runs of experiment name go: --out, or beside
// the compared results (replay), or a new results directory.
func (f simFlags) dir(name string, replay bool) string {
	switch {
	case f.out != "":
		return f.out
	case replay:
		return filepath.Clean(f.compare) + "-sim"
	}
	return newResultsDir(name, "sim-")
}

// simSetup turns sim's argument or --compare into the experiment, its
// preset's info, the replayed measurement (nil without --compare) and the
// simulator's options; Cores 0 means this machine's.
func simSetup(cmd *cobra.Command, f simFlags, args []string, costs sim.Costs) (*experiment.Experiment, *presets.Info, *sim.Replay, sim.Options, error) {
	switch {
	case f.compare != "" && len(args) > 0:
		return nil, nil, nil, sim.Options{}, usagef("give a SPEC or --compare DIR, not both")
	case f.compare != "":
		r, err := sim.ReplayOf(f.compare, costs)
		if err != nil {
			return nil, nil, nil, sim.Options{}, usagef("--compare %v", err)
		}
		pi, err := presets.ReadInfo(f.compare)
		return r.Experiment, pi, r, r.Options(f.cores), err
	case len(args) == 1:
		cores := f.cores
		if p, ok := presets.Lookup(args[0]); ok && cores == 0 && !f.quick {
			cores = p.Cores // the original machine
		}
		// A quick variant is scaled to the machine it is simulated on.
		cores, err := orHostCores(cores)
		if err != nil {
			return nil, nil, nil, sim.Options{}, err
		}
		e, pi, err := specOf(args[0], f.quick, cores)
		if err == nil {
			printWarnings(cmd, e)
			err = f.settle.checkSettled(pi, args[0])
		}
		return e, pi, nil, sim.Options{Cores: cores, Costs: costs}, err
	}
	return nil, nil, nil, sim.Options{}, usagef("give an experiment spec (SPEC.yaml) or --compare DIR")
}

// orHostCores returns cores, or this machine's CPU count when it is 0.
func orHostCores(cores int) (int, error) {
	if cores != 0 {
		return cores, nil
	}
	n, err := cgroup.OnlineCPUs("/")
	if err != nil {
		return 0, fmt.Errorf("counting this machine's CPUs: %w: give --cores", err)
	}
	return n, nil
}

// maxCPUOf is the highest CPU any cpuset of the experiment names (-1 for none).
func maxCPUOf(e *experiment.Experiment) int {
	top := -1
	see := func(c experiment.CPU) {
		if !c.Cpuset.IsZero() {
			top = max(top, c.Cpuset.Top)
		}
	}
	for _, c := range e.Spec.Configs {
		see(c.CPU)
		for _, n := range c.Neighbours {
			see(n.CPU)
		}
	}
	for _, n := range e.Spec.Neighbours {
		see(n.CPU)
	}
	return top
}
