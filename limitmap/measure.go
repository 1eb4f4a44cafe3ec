package limitmap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"time"

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
	// MinRequests lengthens a measured open-loop run whose rate and duration
	// would send fewer requests (default 500, at most MaxDuration): a p99
	// over 200 requests rests on its 2 slowest, and one measured run is
	// compared with the simulation of several.
	MinRequests int
	// MaxDuration caps that lengthening (default 15 s).
	MaxDuration time.Duration
}

// measuredLoad is l lengthened so that an open loop at its rate sends at
// least minRequests, up to maxDuration.
func measuredLoad(l experiment.Load, minRequests int, maxDuration time.Duration) experiment.Load {
	rate := offeredRate(l)
	if rate <= 0 || l.Duration.Duration <= 0 || l.Requests > 0 {
		return l
	}
	want := time.Duration(math.Ceil(float64(minRequests)/rate)) * time.Second
	if want > l.Duration.Duration {
		l.Duration.Duration = min(want, max(maxDuration, l.Duration.Duration))
	}
	return l
}

// Pick chooses n cells to measure, spread over the cells that are not
// overloaded by what the simulation says of them: their p99 ratios span a
// range, and the cells picked are those nearest to n points evenly spaced
// across it on a log scale (for two points, a quarter and three quarters of
// the way from the mildest to the worst cell), so both mild and severe harm
// are checked. It returns indices into m.Cells, in the map's order.
func Pick(m *Map, n int) []int {
	var ok []int
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, c := range m.Cells {
		if !c.Overloaded && c.P99Ratio != nil && *c.P99Ratio > 0 {
			ok = append(ok, i)
			lo, hi = min(lo, math.Log(*c.P99Ratio)), max(hi, math.Log(*c.P99Ratio))
		}
	}
	var out []int
	for i := range min(n, len(ok)) {
		target := lo + (hi-lo)*(float64(i)+0.5)/float64(n)
		best, gap := -1, math.Inf(1)
		for _, k := range ok {
			if d := math.Abs(math.Log(*m.Cells[k].P99Ratio) - target); d < gap && !slices.Contains(out, k) {
				best, gap = k, d
			}
		}
		out = append(out, best)
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
	if mo.MinRequests <= 0 {
		mo.MinRequests = 500
	}
	if mo.MaxDuration <= 0 {
		mo.MaxDuration = 15 * time.Second
	}
	p, err := choose(e, opt.Limited, opt.Reference)
	if err != nil {
		return err
	}
	base := e.Spec.Loads[0]
	for _, k := range Pick(m, mo.Points) {
		c, row := m.Cells[k], k/len(m.Limits)
		v := m.Loads[row]
		cfg, l := withLimit(p.limited, c.LimitMilli), measuredLoad(withLoad(base, m.Axis, v), mo.MinRequests, mo.MaxDuration)
		if m.Axis == AxisBurst {
			cfg.CPU.Burst = experiment.Duration{Duration: burstOf(v)}
		}
		x := *e
		x.Spec.Configs = []experiment.Config{p.reference, cfg}
		x.Spec.Loads = []experiment.Load{l}
		x.Spec.Reference, x.Spec.Repeats, x.Spec.Seed = p.reference.Name, mo.Repeats, opt.Seed
		rel := filepath.Join("measured", cellName(m.Axis, c.LimitMilli, v))
		out, err := runner.Run(ctx, &x, mo.Backend(), runner.Options{Dir: filepath.Join(mo.Dir, rel), Version: mo.Version, Log: mo.Log})
		if err != nil {
			return fmt.Errorf("measuring %s: %w", filepath.Base(rel), err)
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
		mp := Measured{LimitMilli: c.LimitMilli, Measured: meas, Dir: rel,
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
