package limitmap

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/sim"
)

// Options control a map.
type Options struct {
	// Limited names the config whose limit varies (default: the first with
	// a limit); Reference the unlimited config it is compared with (default:
	// the spec's reference if unlimited, else the first without a limit;
	// SelfReference: the limited config without its limit).
	Limited, Reference string
	// Limits are the per-instance limits in millicores.
	Limits []int64
	// Axis is the second axis, Loads its values (requests per second,
	// workers, or burst in milliseconds).
	Axis  Axis
	Loads []float64
	// Repeats is the simulated runs per cell (default 5); the p99 is their
	// median.
	Repeats int
	// Cores and Costs describe the simulated machine (sim.Options).
	Cores int
	Costs sim.Costs
	// Parallel is how many cells are simulated at once. It is the caller's
	// to set (the CPUs to use); 0 means 1, never the runtime's default.
	Parallel int
	// Seed seeds every cell (the spec's seed is replaced).
	Seed uint64
}

// DefaultRepeats is the simulated runs per cell: the median of five p99s
// moves little between seeds.
const DefaultRepeats = 5

// Simulate simulates every cell of the map, and the unlimited reference at
// every load, with up to Options.Parallel simulations at once. The result
// depends only on the experiment and the options: the same seed gives the
// same map, however many run at once.
func Simulate(ctx context.Context, e *experiment.Experiment, opt Options) (*Map, error) {
	if opt.Repeats <= 0 {
		opt.Repeats = DefaultRepeats
	}
	opt.Parallel = max(opt.Parallel, 1)
	if opt.Cores < 1 {
		return nil, fmt.Errorf("cores %d: the simulated machine needs at least one", opt.Cores)
	}
	if len(opt.Limits) == 0 || len(opt.Loads) == 0 {
		return nil, errors.New("a map needs at least one limit and one load")
	}
	if err := checkAxis(e, opt.Axis); err != nil {
		return nil, err
	}
	p, err := choose(e, opt.Limited, opt.Reference)
	if err != nil {
		return nil, err
	}
	m := &Map{Experiment: e.Metadata.Name, Limited: p.limited.Name, Reference: p.reference.Name, Instances: p.limited.Instances,
		Cores: opt.Cores, Seed: opt.Seed, Repeats: opt.Repeats, Axis: opt.Axis, Limits: opt.Limits, Loads: opt.Loads, Measured: []Measured{}}
	base := e.Spec.Loads[0]

	// The references first (one per load; one for a burst axis, whose load
	// does not change), then the cells, each a job of Repeats runs.
	refLoads := opt.Loads
	if opt.Axis == AxisBurst {
		refLoads = opt.Loads[:1]
	}
	type job struct {
		c experiment.Config
		l experiment.Load
		// out is where the summary goes.
		out *record.ConfigSummary
		err *error
	}
	refs := make([]record.ConfigSummary, len(refLoads))
	cells := make([]record.ConfigSummary, len(opt.Loads)*len(opt.Limits))
	notes := make([]string, len(cells))
	errs := make([]error, len(refs)+len(cells))
	var jobs []job
	for i, v := range refLoads {
		jobs = append(jobs, job{c: p.reference, l: withLoad(base, opt.Axis, v), out: &refs[i], err: &errs[i]})
	}
	for r, v := range opt.Loads {
		for c, lim := range opt.Limits {
			k := r*len(opt.Limits) + c
			cfg, l := withLimit(p.limited, lim), withLoad(base, opt.Axis, v)
			if opt.Axis == AxisBurst {
				cfg.CPU.Burst = experiment.Duration{Duration: burstOf(v).Round(time.Microsecond)}
				if _, _, err := e.Settings(cfg); err != nil {
					notes[k] = err.Error() // a burst above the quota: the kernel refuses it
					continue
				}
			}
			jobs = append(jobs, job{c: cfg, l: l, out: &cells[k], err: &errs[len(refs)+k]})
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan job)
	var wg sync.WaitGroup
	for range opt.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				s, err := simulateCell(ctx, e, j.c, j.l, opt)
				*j.out, *j.err = s, err
				if err != nil {
					cancel()
				}
			}
		}()
	}
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		work <- j
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	for i, v := range refLoads {
		m.References = append(m.References, referenceOf(refs[i], withLoad(base, opt.Axis, v), v))
	}
	limitedCores := func(milli int64) float64 { return float64(milli) * float64(max(p.limited.Instances, 1)) / 1000 }
	for r, v := range opt.Loads {
		ref := m.References[min(r, len(m.References)-1)]
		for c, lim := range opt.Limits {
			k := r*len(opt.Limits) + c
			s := cells[k]
			cell := Cell{LimitMilli: lim, Note: notes[k]}
			setCoords(opt.Axis, v, &cell.RateRPS, &cell.Workers, &cell.BurstMs)
			if notes[k] == "" {
				cell.ThrottledPeriodsRatio = round3(s.ThrottledPct / 100)
				cell.MeanCores = round3(s.MeanCores)
				cell.P99Ms = round3(s.P99Ms)
				// Only an open loop overloads: its requests keep coming
				// whatever the servers do. A closed loop waits for them.
				cell.Overloaded = offeredRate(withLoad(base, opt.Axis, v)) > 0 && limitedCores(lim) < ref.OfferedCores
				if !cell.Overloaded && ref.P99Ms > 0 {
					ratio := round3(s.P99Ms / ref.P99Ms)
					cell.P99Ratio = &ratio
				}
			}
			m.Cells = append(m.Cells, cell)
		}
	}
	return m, nil
}

// referenceOf sums up the reference at one load. The work it offers is its
// CPU per answered request times the rate the load offers (an open loop),
// or its CPU use (a closed loop, which offers what the servers answer).
func referenceOf(s record.ConfigSummary, l experiment.Load, v float64) Reference {
	ref := Reference{Load: v, P99Ms: round3(s.P99Ms), MeanCores: round3(s.MeanCores), ThroughputRPS: round3(s.ThroughputRPS)}
	ref.OfferedCores = s.MeanCores
	if rate := offeredRate(l); rate > 0 && s.ThroughputRPS > 0 {
		ref.OfferedCores = s.MeanCores / s.ThroughputRPS * rate
	}
	ref.OfferedCores = round3(ref.OfferedCores)
	return ref
}

// simulateCell simulates one config under one load Options.Repeats times,
// each with its own seed, and sums the runs up as every summary does.
func simulateCell(ctx context.Context, e *experiment.Experiment, c experiment.Config, l experiment.Load, opt Options) (record.ConfigSummary, error) {
	var runs []*record.Run
	for r := range opt.Repeats {
		x := cellSpec(e, c, l, repeatSeed(opt.Seed, r))
		rs, err := simulateRun(ctx, x, opt)
		if err != nil {
			return record.ConfigSummary{}, fmt.Errorf("simulating %s at %s: %w", c.Name, describeLoad(l), err)
		}
		runs = append(runs, rs)
	}
	return record.Aggregate(c, l.Name, runs), nil
}

// simulateRun simulates the one run of x in memory (sim.Simulate).
func simulateRun(ctx context.Context, x *experiment.Experiment, opt Options) (*record.Run, error) {
	return sim.Simulate(ctx, x, x.Runs()[0], sim.Options{Cores: opt.Cores, Costs: opt.Costs})
}

func describeLoad(l experiment.Load) string {
	switch {
	case !l.Ramp.IsZero():
		return l.Ramp.String() + " workers"
	case l.Workers > 0:
		return fmt.Sprintf("%d workers", l.Workers)
	case l.Rate > 0:
		return fmt.Sprintf("%g req/s", l.Rate)
	}
	return l.Mode
}
