package sim

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/stats"
	"github.com/throttlelab/throttlelab/workload"
)

// MeasuredCosts are the costs of the machine a measurement ran on, for
// simulating it (sim --compare, the validation): base with the burn speed
// the run calibrated (env.json) and, for tile workloads, the Mandelbrot
// kernel's speed as the server's thread clock measured it in that run: the
// handler CPU of its tile requests, less TileOverhead each, over their
// catalogue iterations. A CPU is not equally fast every day, and the tiles'
// cost per iteration differs between tile sets (docs/simulator.md has the
// figures), so the run's own figure replaces the default. So does the Go
// runtime's CPU per wake-up from idle (wakeCPU), which differs from day to
// day. The latencies the simulation is compared on are not used.
func MeasuredCosts(dir string, e *experiment.Experiment, env record.Env, runs []*record.Run, base Costs) (Costs, error) {
	c := base
	if env.BurnIterationsPerMs > 0 {
		c.BurnIterationsPerMs = env.BurnIterationsPerMs
	}
	if gap, ok, err := burstGap(dir, e, runs); err != nil {
		return c, err
	} else if ok {
		c.BurstGap = gap
	}
	// Each run's request records, read once for the figures below that
	// need them (wakeCPU, the tiles' costs).
	read := make([][]loadgen.Record, len(runs))
	requests := func(i int) ([]loadgen.Record, error) {
		if read[i] == nil {
			recs, err := record.ReadRequests(record.RunIDDir(dir, runs[i].ID))
			if err != nil {
				return nil, err
			}
			read[i] = recs
		}
		return read[i], nil
	}
	if wake, ok, err := wakeCPU(runs, requests, c); err != nil {
		return c, err
	} else if ok {
		c.WakeCPU = wake
	}
	if e.Spec.Workload.Request != string(loadgen.KindTile) {
		return c, nil
	}
	cat, err := workload.DefaultCatalog()
	if err != nil {
		return c, err
	}
	var cpu, iters float64
	for i := range runs {
		recs, err := requests(i)
		if err != nil {
			return c, fmt.Errorf("measured tile costs: %w", err)
		}
		for _, rec := range recs {
			if rec.Status != 200 || rec.ServerCPU <= 0 || rec.Tile == "" {
				continue
			}
			t, err := parseTile(rec.Tile)
			if err != nil {
				return c, fmt.Errorf("measured tile costs: %w", err)
			}
			info, err := cat.Lookup(t)
			if err != nil {
				return c, fmt.Errorf("measured tile costs: %w", err)
			}
			cpu += float64(rec.ServerCPU - c.TileOverhead)
			iters += float64(info.Iterations)
		}
	}
	if iters > 0 && cpu > 0 {
		c.NsPerIteration = cpu / iters
	}
	return c, nil
}

// parseTile parses a record's "x,y".
func parseTile(s string) (workload.Tile, error) {
	xs, ys, ok := strings.Cut(s, ",")
	x, errx := strconv.Atoi(xs)
	y, erry := strconv.Atoi(ys)
	if !ok || errx != nil || erry != nil {
		return workload.Tile{}, fmt.Errorf("tile %q: want x,y", s)
	}
	return workload.Tile{X: x, Y: y}, nil
}

// burstGap is the median time between the measured runs' burst cycles
// beyond each cycle's busy phase and its sleep (Costs.BurstGap); ok is false
// without two cycles of a burst neighbour.
func burstGap(dir string, e *experiment.Experiment, runs []*record.Run) (time.Duration, bool, error) {
	var gaps []float64
	for _, r := range runs {
		i := slices.IndexFunc(e.Spec.Configs, func(c experiment.Config) bool { return c.Name == r.Config })
		if i < 0 {
			continue
		}
		for _, n := range e.NeighboursOf(e.Spec.Configs[i]) {
			if n.Kind != "burst" {
				continue
			}
			cycles, err := record.ReadBurstCycles(record.RunIDDir(dir, r.ID), n.Name)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return 0, false, fmt.Errorf("measured burst gaps: %w", err)
			}
			for k := 1; k < len(cycles); k++ {
				gap := cycles[k].Start.Sub(cycles[k-1].Start) - time.Duration(cycles[k-1].BusyWallMs*1e6) - n.Sleep.Duration
				gaps = append(gaps, float64(gap))
			}
		}
	}
	if len(gaps) == 0 {
		return 0, false, nil
	}
	return time.Duration(max(0, stats.Median(gaps))), true, nil
}

// minWakes is the fewest wake-ups from idle that wakeCPU takes a figure from.
const minWakes = 100

// wakeCPU is the measured runs' CPU per wake-up of an idle server
// (Costs.WakeCPU): what the instances' groups used (usage_cores over the
// load) beyond their handlers' CPU (the thread clock's, which holds the
// request's own work) and beyond the idle background the model charges
// (Costs.Background for each idle spell over 2 ms), over the requests that
// found their instance idle for over a millisecond, as the model charges
// it. An instance's idle spells are read from the client's side: from the
// end of its last response to the next send. ok is false where the runs
// recorded no usage or server timing, fewer than minWakes wake-ups, or
// wake-ups for fewer than half the requests.
func wakeCPU(runs []*record.Run, requests func(int) ([]loadgen.Record, error), c Costs) (time.Duration, bool, error) {
	var other float64 // ns
	wakes, n := 0, 0
	for i, r := range runs {
		if len(r.Usage) == 0 || r.Seconds <= 0 {
			return 0, false, nil
		}
		for _, u := range r.Usage {
			other += u.Mean * r.Seconds * 1e9
		}
		recs, err := requests(i)
		if err != nil {
			return 0, false, fmt.Errorf("measured wake-up CPU: %w", err)
		}
		slices.SortStableFunc(recs, func(a, b loadgen.Record) int { return cmp.Compare(a.Start, b.Start) })
		type spell struct{ end, arrival time.Duration }
		last := map[string]*spell{}
		for _, rec := range recs {
			if rec.Err != "" {
				continue
			}
			if rec.ServerCPU < 0 {
				return 0, false, nil // no server timing: the handlers' CPU is not known
			}
			other -= float64(rec.ServerCPU)
			n++
			s := last[rec.Instance]
			if s == nil {
				s = &spell{end: rec.Start, arrival: rec.Start}
				last[rec.Instance] = s
			}
			if rec.Start-s.end > time.Millisecond {
				wakes++
			}
			if idle := min(rec.Start-s.arrival, time.Second); idle > 2*time.Millisecond {
				other -= c.Background * float64(idle)
			}
			s.end = max(s.end, rec.Intended+rec.Latency)
			s.arrival = rec.Start
		}
	}
	if wakes < minWakes || 2*wakes < n {
		// Mostly busy servers (a closed loop): their CPU beyond the
		// handlers is not the wake-ups'.
		return 0, false, nil
	}
	return time.Duration(max(other, 0) / float64(wakes)), true, nil
}
