package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/experiments"
	"github.com/throttlelab/throttlelab/limitmap"
	"github.com/throttlelab/throttlelab/local"
	"github.com/throttlelab/throttlelab/record"
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
	fl.Int64Var(&f.seed, "seed", -1, "seed of every cell (default: the spec's)")
	fl.StringVar(&f.out, "out", "", "output directory (default results/NAME/map-TIMESTAMP)")
	fl.StringVar(&f.binary, "binary", "", "throttlelab binary for measured instances (default: this one)")
	fl.BoolVar(&f.quick, "quick", false, "map a preset's quick variant, scaled to this machine")
	return cmd
}

func runMap(cmd *cobra.Command, f mapFlags, arg string) error {
	opt := limitmap.Options{Limited: f.limited, Reference: f.reference, Repeats: f.repeats, Costs: sim.DefaultCosts()}
	var err error
	if pm, ok := presetMaps[arg]; ok && !f.quick && f.limit == "" && f.rate == "" && f.workers == "" && f.burst == "" {
		f.limit, f.rate, f.workers, f.burst = pm.limit, pm.rate, pm.workers, pm.burst
		if f.limited == "" {
			f.limited = pm.limited
		}
		if f.reference == "" {
			f.reference = pm.reference
		}
		if !cmd.Flags().Changed("repeats") && pm.repeats > 0 {
			f.repeats = pm.repeats
		}
		opt.Limited, opt.Reference, opt.Repeats = f.limited, f.reference, f.repeats
	}
	if f.limit == "" {
		return usagef("--limit FROM:TO:STEPS is needed, such as --limit 100m:1:10")
	}
	if opt.Limits, err = limitmap.ParseLimitRange(f.limit); err != nil {
		return usagef("--limit: %v", err)
	}
	set := 0
	for _, s := range []string{f.rate, f.workers, f.burst} {
		if s != "" {
			set++
		}
	}
	if set != 1 {
		return usagef("give one second axis: --rate (open loop), --workers (closed loop) or --burst")
	}
	switch {
	case f.rate != "":
		opt.Axis = limitmap.AxisRate
		if opt.Loads, err = limitmap.ParseRateRange(f.rate); err != nil {
			return usagef("--rate: %v", err)
		}
	case f.workers != "":
		opt.Axis = limitmap.AxisWorkers
		w, err := limitmap.ParseWorkersRange(f.workers)
		if err != nil {
			return usagef("--workers: %v", err)
		}
		for _, v := range w {
			opt.Loads = append(opt.Loads, float64(v))
		}
	default:
		opt.Axis = limitmap.AxisBurst
		b, err := limitmap.ParseBurstRange(f.burst)
		if err != nil {
			return usagef("--burst: %v", err)
		}
		for _, d := range b {
			opt.Loads = append(opt.Loads, float64(d.Microseconds())/1000)
		}
	}
	if f.repeats < 1 || f.measure < 0 || f.measureRepeats < 1 {
		return usagef("--repeats and --measure-repeats want 1 or more, --measure 0 or more")
	}
	host, err := orHostCores(0)
	if err != nil {
		return err
	}
	if f.parallel < 0 {
		return usagef("--parallel %d: want 1 or more (or leave it out for this machine's CPUs)", f.parallel)
	}
	// Never the runtime's default: GOMAXPROCS follows a cgroup limit, and
	// the map should use the CPUs it is given.
	opt.Parallel = f.parallel
	if opt.Parallel == 0 {
		opt.Parallel = host
	}
	cores := f.cores
	if f.measure > 0 {
		if cores != 0 && cores != host {
			return usagef("--measure runs on this machine (%d CPUs): leave --cores out, or give --cores %d", host, host)
		}
		cores = host
	} else if p, ok := experiments.Lookup(arg); ok && cores == 0 && !f.quick {
		cores = p.Cores
	}
	if cores, err = checkCores(cores); err != nil {
		return err
	}
	opt.Cores = cores
	e, _, err := specOf(arg, f.quick, cores)
	if err != nil {
		return err
	}
	printWarnings(cmd, e)
	if err := e.CheckCPUs(cores); err != nil {
		return usageError{fmt.Errorf("%w: give --cores %d or more", err, maxCPUOf(e)+1)}
	}
	opt.Seed = e.Spec.Seed
	if f.seed >= 0 {
		opt.Seed = uint64(f.seed)
	}
	dir := f.out
	if dir == "" {
		dir = newResultsDir(e.Metadata.Name, "map-")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "mapping %s: %d limits x %d %s, %d runs per cell on %d simulated cores -> %s\n",
		e.Metadata.Name, len(opt.Limits), len(opt.Loads), opt.Axis, opt.Repeats, cores, dir)
	started := time.Now()
	m, err := limitmap.Simulate(cmd.Context(), e, opt)
	if err != nil {
		if cmd.Context().Err() != nil {
			return exitError{code: 130, err: errors.New("interrupted: no map written")}
		}
		return usageOrRun(err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "simulated %d cells and %d references in %.1f s (%d at once)\n", len(m.Cells), len(m.References), time.Since(started).Seconds(), opt.Parallel)
	var measureErr error
	if f.measure > 0 {
		bin := f.binary
		if bin == "" {
			if bin, err = os.Executable(); err != nil {
				return err
			}
		}
		measureErr = limitmap.Measure(cmd.Context(), e, m, opt, limitmap.MeasureOptions{Points: f.measure, Repeats: f.measureRepeats, Dir: dir,
			Backend: func() runner.Backend { return local.New(local.Options{Binary: bin, Log: cmd.ErrOrStderr()}) },
			Version: Version, Log: cmd.ErrOrStderr()})
		fmt.Fprintf(cmd.ErrOrStderr(), "measured %d points; %.1f s in all\n", len(m.Measured), time.Since(started).Seconds())
	}
	// The map is written whatever the measuring did: it holds the points
	// measured before a failure.
	if err := record.WriteJSON(filepath.Join(dir, "map.json"), m); err != nil {
		return err
	}
	err = record.WriteFileAtomic(filepath.Join(dir, "report.html"), func(fh *os.File) error { return limitmap.WriteHTML(fh, m) })
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	limitmap.WriteText(out, m)
	fmt.Fprintf(out, "\nmap: %s\nreport: %s\n", filepath.Join(dir, "map.json"), filepath.Join(dir, "report.html"))
	if measureErr != nil && cmd.Context().Err() != nil {
		return exitError{code: 130, err: fmt.Errorf("interrupted: the map holds the %d points measured before", len(m.Measured))}
	}
	return measureErr
}

// usageOrRun marks the errors of a map that cannot be drawn for this spec
// (no limited or unlimited config, a load without that axis) as bad input.
func usageOrRun(err error) error {
	if errors.Is(err, limitmap.ErrNoReference) || errors.Is(err, limitmap.ErrNoLimited) || errors.Is(err, limitmap.ErrAxis) {
		return usageError{err}
	}
	return err
}

// presetMap is the map a preset draws when no ranges are given: its
// finding's limit against its load, at the original scale.
type presetMap struct {
	limited, reference, limit, rate, workers, burst string
	repeats                                         int
}

// presetMaps are the presets whose finding is a point of a map: F1 and F2
// (limit per pod against the image's workers), F9 (a small limit against
// 5 ms requests one at a time, compared with the same instance unlimited)
// and F13 (limit against burst).
var presetMaps = map[string]presetMap{
	"f01-logjam":     {limit: "500m:2:7", workers: "2:16:8", repeats: 1},
	"f02-limit-size": {limited: "limit-1", limit: "500m:4:8", workers: "2:16:8", repeats: 1},
	"f09-burn-flow":  {reference: "self", limit: "100m:1:10", workers: "1:4:4"},
	"f13-cpu-burst":  {limited: "burst", reference: "self", limit: "2:6:5", burst: "0:400ms:5", repeats: 3},
}
