package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/limitmap"
	"github.com/throttlelab/throttlelab/local"
	"github.com/throttlelab/throttlelab/presets"
	"github.com/throttlelab/throttlelab/runner"
	"github.com/throttlelab/throttlelab/sim"
)

type mapFlags struct {
	limit, rate, workers, burst string
	limited, reference          string
	measure, measureRepeats     int
	repeats, cores, parallel    int
	seed                        int64
	out, binary                 string
	quick                       bool
}

func newMapCmd() *cobra.Command {
	var f mapFlags
	cmd := &cobra.Command{
		Use:   "map SPEC.yaml|PRESET",
		Short: "Map where limits hurt: simulate a grid of limit against load",
		Long: `Simulate an experiment over a grid: the limited config's CPU limit per instance
(--limit) against the offered load (--rate for open-loop loads, --workers for
closed loops) or its burst allowance (--burst). Each cell is simulated
--repeats times and compared with the unlimited reference at the same load:
p99 against the reference's p99, the throttled share of periods
(nr_throttled / nr_periods) and the mean CPU use. Cells whose limits add up
to less than the offered work are overloaded and get no ratio.

--measure N also runs N cells on this machine's real cgroups (needs root),
each beside the unlimited reference, and records measured beside simulated.

Writes DIR/map.json and DIR/report.html (heat maps with contours at 1.5x,
2x and 5x) and prints the grid. The same spec, ranges and seed give the same
map.json.

The presets f01-logjam, f02-limit-size, f09-burn-flow and f13-cpu-burst
bring their own map: given without ranges, they draw it.`,
		Example: `  throttlelab map examples/limits.yaml --limit 100m:1:10 --rate 20:200:10
  sudo throttlelab map examples/limits.yaml --limit 100m:1:10 --rate 20:200:10 --measure 2
  throttlelab map f13-cpu-burst --limited burst --reference self --limit 2:6:5 --burst 0:400ms:5
  throttlelab map f01-logjam`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runMap(cmd, f, args[0]) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.limit, "limit", "", "per-instance CPU limits FROM:TO:STEPS, such as 100m:1:10")
	fl.StringVar(&f.rate, "rate", "", "open-loop rates FROM:TO:STEPS in requests per second, such as 20:200:10 (per source for on/off loads)")
	fl.StringVar(&f.workers, "workers", "", "closed-loop workers FROM:TO:STEPS, such as 1:8:8")
	fl.StringVar(&f.burst, "burst", "", "burst allowances FROM:TO:STEPS, such as 0:400ms:5 (the load as the spec has it)")
	fl.StringVar(&f.limited, "limited", "", "the config whose limit varies (default: the first with a limit)")
	fl.StringVar(&f.reference, "reference", "", "the unlimited config to compare with (default: the spec's reference, or the first without a limit; self: the limited config without its limit)")
	fl.IntVar(&f.measure, "measure", 0, "also measure this many cells on real cgroups (needs root)")
	fl.IntVar(&f.measureRepeats, "measure-repeats", 1, "measured runs of each config per measured cell")
	fl.IntVar(&f.repeats, "repeats", limitmap.DefaultRepeats, "simulated runs per cell (the p99 is their median)")
	fl.IntVar(&f.cores, "cores", 0, "CPUs of the simulated machine (default: this machine's; a preset's original without --measure)")
	fl.IntVar(&f.parallel, "parallel", 0, "cells simulated at once (default: this machine's CPUs)")
	seedVar(fl, &f.seed, "seed of every cell (default: the spec's)")
	fl.StringVar(&f.out, "out", "", "output directory (default results/NAME/map-TIMESTAMP)")
	fl.StringVar(&f.binary, "binary", "", "throttlelab binary for measured instances (default: this one)")
	fl.BoolVar(&f.quick, "quick", false, "map a preset's quick variant, scaled to this machine")
	return cmd
}

func runMap(cmd *cobra.Command, f mapFlags, arg string) error {
	r := f.presetRanges(cmd, arg)
	opt := limitmap.Options{Limited: f.limited, Reference: f.reference, Repeats: f.repeats, Costs: sim.DefaultCosts(), Parallel: f.parallel}
	if r.Limit == "" {
		return usagef("--limit FROM:TO:STEPS is needed, such as 100m:1:10")
	}
	if err := r.Apply(&opt); err != nil {
		return rangeUsage(err)
	}
	if f.repeats < 1 || f.measure < 0 || f.measureRepeats < 1 || f.parallel < 0 {
		return usagef("--repeats and --measure-repeats want 1 or more, --measure and --parallel 0 or more")
	}
	host, err := orHostCores(0)
	if err != nil {
		return err
	}
	// Never the runtime's default: GOMAXPROCS follows a cgroup limit, and
	// the map should use the CPUs it is given.
	opt.Parallel = cmp.Or(opt.Parallel, host)
	if opt.Cores, err = mapCores(f, arg, host); err != nil {
		return err
	}
	e, err := checkedSpec(cmd, arg, f.quick, opt.Cores)
	if err != nil {
		return err
	}
	opt.Seed = e.Spec.Seed
	if f.seed >= 0 {
		opt.Seed = uint64(f.seed)
	}
	d := limitmap.DrawOptions{Dir: cmp.Or(f.out, newResultsDir(e.Metadata.Name, "map-")), Out: cmd.OutOrStdout(), Log: cmd.ErrOrStderr()}
	if f.measure > 0 {
		bin, err := binaryOr(f.binary)
		if err != nil {
			return err
		}
		d.Measure = limitmap.MeasureOptions{Points: f.measure, Repeats: f.measureRepeats, Version: Version, Log: cmd.ErrOrStderr(),
			Backend: func() runner.Backend { return local.New(local.Options{Binary: bin, Log: cmd.ErrOrStderr()}) }}
	}
	m, err := limitmap.Draw(cmd.Context(), e, opt, d)
	return mapError(cmd.Context(), m, err)
}

// presetRanges is the ranges of the flags, or, when none is given and arg
// is a preset with a map of its own (not --quick), the preset's, with its
// limited and reference configs and repeats where the flags leave them.
func (f *mapFlags) presetRanges(cmd *cobra.Command, arg string) limitmap.Ranges {
	r := limitmap.Ranges{Limit: f.limit, Rate: f.rate, Workers: f.workers, Burst: f.burst}
	if pm, ok := presets.MapOf(arg); ok && !f.quick && r == (limitmap.Ranges{}) {
		r = limitmap.Ranges{Limit: pm.Limit, Rate: pm.Rate, Workers: pm.Workers, Burst: pm.Burst}
		f.limited, f.reference = cmp.Or(f.limited, pm.Limited), cmp.Or(f.reference, pm.Reference)
		if !cmd.Flags().Changed("repeats") && pm.Repeats > 0 {
			f.repeats = pm.Repeats
		}
	}
	return r
}

// mapError is map's exit: 130 when interrupted (saying what the map holds),
// a usage error when nothing was drawn.
func mapError(ctx context.Context, m *limitmap.Map, err error) error {
	switch {
	case err == nil:
		return nil
	case m == nil && ctx.Err() != nil:
		return exitError{code: ExitInterrupted, err: errors.New("interrupted: no map written")}
	case m == nil:
		return usageOrRun(err)
	case ctx.Err() != nil:
		return exitError{code: ExitInterrupted, err: fmt.Errorf("interrupted: the map holds the %d points measured before", len(m.Measured))}
	}
	return err
}

// mapCores is the simulated machine's CPUs: --cores, this machine's when
// cells are measured on it, or a preset's original machine's.
func mapCores(f mapFlags, arg string, host int) (int, error) {
	cores := f.cores
	switch {
	case f.measure > 0 && cores != 0 && cores != host:
		return 0, usagef("--measure runs on this machine (%d CPUs): leave --cores out, or give --cores %d", host, host)
	case f.measure > 0:
		cores = host
	case cores == 0 && !f.quick:
		if p, ok := presets.Lookup(arg); ok {
			cores = p.Cores
		}
	}
	return checkCores(cores)
}

// checkedSpec is the experiment of a command's argument (specOf) for a
// machine of cores CPUs: its warnings printed, its cpusets checked.
func checkedSpec(cmd *cobra.Command, arg string, quick bool, cores int) (*experiment.Experiment, error) {
	e, _, err := specOf(arg, quick, cores)
	if err != nil {
		return nil, err
	}
	printWarnings(cmd, e)
	if err := e.CheckCPUs(cores); err != nil {
		return nil, usageError{fmt.Errorf("%w: give --cores %d or more", err, maxCPUOf(e)+1)}
	}
	return e, nil
}

// binaryOr is the throttlelab binary instances run: bin, or this one.
func binaryOr(bin string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	return os.Executable()
}

// rangeUsage names the flag that carried a range limitmap could not read:
// the library names the range, the command line its flag.
func rangeUsage(err error) error {
	var re *limitmap.RangeError
	switch {
	case !errors.As(err, &re):
		return usageError{err}
	case re.Range == "": // the second axis missing, or given twice
		return usagef("give one second axis: --rate (open loop), --workers (closed loop) or --burst")
	}
	return usagef("--%s: %v", re.Range, re)
}

// usageOrRun marks the errors of a map that cannot be drawn for this spec
// (no limited or unlimited config, a load without that axis) as bad input.
func usageOrRun(err error) error {
	if errors.Is(err, limitmap.ErrNoReference) || errors.Is(err, limitmap.ErrNoLimited) || errors.Is(err, limitmap.ErrAxis) || errors.Is(err, limitmap.ErrRange) {
		return usageError{err}
	}
	return err
}
