package limitmap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/runner"
	"github.com/throttlelab/throttlelab/units"
)

// MeasureOptions control the measured points of a map.
type MeasureOptions struct {
	// Points is how many cells to measure.
	Points int
	// Repeats is the measured runs of each config per point (default 1).
	Repeats int
	// Dir receives one results directory per point, Dir/measured/CELL,
	// which throttlelab report reads like any other.
	Dir string
	// Backend makes the backend each point runs on (local.New for real
	// cgroups).
	Backend func() runner.Backend
	// Version goes into each point's env.json; Log receives the runner's
	// progress.
	Version string
	Log     io.Writer
}

// Pick chooses n cells to measure, spread over the cells that are not
// overloaded: ordered by their simulated p99 ratio, the cells at the
// middle of n equal shares (for two points, the quarter and three-quarter
// marks), so both the benign and the harmful part are checked. It returns
// indices into m.Cells, in the map's order.
func Pick(m *Map, n int) []int {
	var ok []int
	for i, c := range m.Cells {
		if !c.Overloaded && c.P99Ratio != nil {
			ok = append(ok, i)
		}
	}
	slices.SortStableFunc(ok, func(a, b int) int {
		ra, rb := *m.Cells[a].P99Ratio, *m.Cells[b].P99Ratio
		switch {
		case ra < rb:
			return -1
		case ra > rb:
			return 1
		}
		return a - b
	})
	n = min(n, len(ok))
	var out []int
	for i := range n {
		k := ok[int(float64(len(ok))*(float64(i)+0.5)/float64(n))]
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Measure runs Pick(m, Points) cells on the backend, each beside the
// unlimited reference at the same load, and records measured against
// simulated in m.Measured. opt must be the options the map was simulated
// with. A point that fails stops the measuring; the points measured before
// it are kept in m.
func Measure(ctx context.Context, e *experiment.Experiment, m *Map, opt Options, mo MeasureOptions) error {
	if mo.Backend == nil {
		return errors.New("measuring needs a backend")
	}
	if mo.Repeats <= 0 {
		mo.Repeats = 1
	}
	p, err := choose(e, opt.Limited, opt.Reference)
	if err != nil {
		return err
	}
	base := e.Spec.Loads[0]
	for _, k := range Pick(m, mo.Points) {
		c, row := m.Cells[k], k/len(m.Limits)
		v := m.Loads[row]
		cfg, l := withLimit(p.limited, c.LimitMilli), withLoad(base, m.Axis, v)
		if m.Axis == AxisBurst {
			cfg.CPU.Burst = experiment.Duration{Duration: burstOf(v)}
		}
		x := *e
		x.Spec.Configs = []experiment.Config{p.reference, cfg}
		x.Spec.Loads = []experiment.Load{l}
		x.Spec.Reference, x.Spec.Repeats, x.Spec.Seed = p.reference.Name, mo.Repeats, opt.Seed
		dir := filepath.Join(mo.Dir, "measured", cellName(m.Axis, c.LimitMilli, v))
		out, err := runner.Run(ctx, &x, mo.Backend(), runner.Options{Dir: dir, Version: mo.Version, Log: mo.Log})
		if err != nil {
			return fmt.Errorf("measuring %s: %w", filepath.Base(dir), err)
		}
		var meas Figures
		for _, cs := range out.Summary.Configs {
			switch cs.Config {
			case p.reference.Name:
				meas.ReferenceP99Ms = round3(cs.P99Ms)
			case cfg.Name:
				meas.P99Ratio, meas.P99Ms = round3(cs.P99VsReference), round3(cs.P99Ms)
				meas.ThrottledPeriodsRatio = round3(cs.ThrottledPct / 100)
			}
		}
		ref := m.References[min(row, len(m.References)-1)]
		mp := Measured{LimitMilli: c.LimitMilli, Measured: meas, Dir: dir,
			Simulated: Figures{P99Ratio: *c.P99Ratio, ThrottledPeriodsRatio: c.ThrottledPeriodsRatio, P99Ms: c.P99Ms, ReferenceP99Ms: ref.P99Ms}}
		setCoords(m.Axis, v, &mp.RateRPS, &mp.Workers, &mp.BurstMs)
		m.Measured = append(m.Measured, mp)
	}
	return nil
}

// cellName names a cell's measurement directory: 250m-rate-100.
func cellName(axis Axis, limit int64, v float64) string {
	what := map[Axis]string{AxisRate: "rate", AxisWorkers: "workers", AxisBurst: "burst-ms"}[axis]
	return units.FormatMilliCPU(limit) + "-" + what + "-" + strconv.FormatFloat(v, 'f', -1, 64)
}
