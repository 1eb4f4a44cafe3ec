package presets

import (
	"fmt"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/stats"
	"github.com/throttlelab/throttlelab/verdict"
)

// f07SchedBench is f07-sched-bench.yaml.
var f07SchedBench = &Preset{
	Name: "f07-sched-bench", Finding: "F7", Source: schedBench, Cores: 4,
	Claim:     "a 2-CPU limit cuts the goodput of 200 ms bursts by ~43% although the 1 s average use is under 1 core",
	Check:     "goodput (limited) / goodput (unlimited) between 0.45 and 0.75; 100 ms usage peaks at the limit while the 1 s average stays below it",
	Published: "goodput per burst ~4M -> ~2.3M iterations (-43%)",
	quick: func(e *experiment.Experiment, m Machine) (string, error) {
		workers, lim := m.Count(4, 1), m.Share(2)
		c, err := config(e, "limit-2")
		if err != nil {
			return "", err
		}
		if len(c.Neighbours) == 0 {
			return "", fmt.Errorf("config %q has no burst neighbour", c.Name)
		}
		sleep := phaseFixedSleep(c.Neighbours[0].Busy.Duration, c.Neighbours[0].CPU.Period.Duration)
		for i := range e.Spec.Configs {
			n := &e.Spec.Configs[i].Neighbours[0]
			n.Workers, n.Sleep = workers, dur(sleep)
			if !n.CPU.Limit.IsZero() {
				n.CPU.Limit = lim
			}
		}
		e.Spec.Loads[0].Duration = dur(11 * time.Second)
		return fmt.Sprintf("%d burst workers and a %s-CPU limit (4 and 2 of 4 cores, scaled), 11 s; asleep %s so that every burst starts 62 ms into a period, as a burst that ends throttled ends at a period boundary (8 or 9 bursts)", workers, lim, sleep), nil
	},
	negative: func(e *experiment.Experiment) error {
		// A limit far above the burst's demand: goodput does not fall.
		c, err := config(e, "limit-2")
		if err != nil {
			return err
		}
		for i := range c.Neighbours {
			c.Neighbours[i].CPU.Limit = milli(64000)
		}
		return nil
	},
	verdict: func(r *Results) ([]verdict.Condition, string, error) {
		gu, nu, err := r.BurstGoodput("unlimited", "burst")
		if err != nil {
			return nil, "", err
		}
		gl, nl, err := r.BurstGoodput("limit-2", "burst")
		if err != nil {
			return nil, "", err
		}
		u, err := r.NeighbourUsage("limit-2", "burst")
		if err != nil {
			return nil, "", err
		}
		cfg, err := config(r.Spec, "limit-2")
		if err != nil {
			return nil, "", err
		}
		if len(cfg.Neighbours) == 0 {
			return nil, "", fmt.Errorf("config %q has no burst neighbour", cfg.Name)
		}
		c := cfg.Neighbours[0]
		limit := cpus(c.CPU.Limit)
		ratio := gl / gu
		d, _, per, err := r.samplesPer([]string{"limit-2", "unlimited"}, stats.Mean, func(run *record.Run) ([]float64, error) {
			cycles, err := record.ReadBurstCycles(record.RunIDDir(r.Dir, run.ID), "burst")
			v := make([]float64, len(cycles))
			for i, cy := range cycles {
				v[i] = float64(cy.Total)
			}
			return v, err
		})
		if err != nil {
			return nil, "", err
		}
		g := cond("goodput limited / unlimited", ratio, stats.Ratio(d[0], d[1]), "between", 0.45, "the published range around -43%")
		g.High = 0.75
		g.PerRepeat, g.LogScale = perRatio(per[0], per[1]), true
		// Peaks are the highest windows of one run: no interval, judged as
		// they are, with 10% room under the limit.
		peak := cond("limited 100 ms peak cores", u.Peak100ms, nil, ">=", 0.9*limit, "within 10% of the limit")
		avg := cond("limited busiest 1 s cores", u.Peak1s, nil, "<=", limit, "at most the limit")
		return []verdict.Condition{g, peak, avg}, fmt.Sprintf("goodput %.0f M iterations per burst limited against %.0f M unlimited (%d and %d bursts): %.2f (needs 0.45-0.75); limited burst used %.2f cores at its 100 ms peak and %.2f over its busiest second, limit %.2f",
			gl/1e6, gu/1e6, nl, nu, ratio, u.Peak100ms, u.Peak1s, limit), nil
	},
}

// phaseFixedSleep is the quick variant's sleep between bursts of length
// busy under a quota of the given period. A burst's goodput under the
// limit depends on where in the period it starts (from 2 to 3 quotas for a
// 200 ms burst of 2 workers at 1 CPU: 0.5 to 0.75 of the unlimited), and a
// burst that ends while its group is throttled ends at the next period
// boundary (its workers cannot run to see the time), so the next one
// starts the sleep after a boundary. With the original 2 s sleep (whole
// periods) a run's bursts kept whatever phase it began at, or fell to 0:
// runs measured 0.53, 0.55 and 0.73 (2026-11-29). Whole periods plus 0.618
// of one puts every burst after a run's first at the same phase, 62 ms
// into a period, in every run: on the 2-core reference machine
// (2026-11-29, quiet) the limited bursts then held 238 ms of wall time
// and the ratio was 0.68 to 0.72 per repeat. The check's range spans every
// phase; the quick run measures one known phase instead of a random one.
// The sleep stays over 1 s, so no second holds parts of two bursts and the
// busiest second's use is the original's.
func phaseFixedSleep(busy, period time.Duration) time.Duration {
	if period <= 0 {
		period = 100 * time.Millisecond
	}
	whole := (busy + time.Second + period - 1) / period * period
	return whole - busy + (period * 618 / 1000).Round(time.Millisecond)
}
