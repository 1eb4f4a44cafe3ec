package presets

import (
	"fmt"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/verdict"
)

// f01Logjam is f01-logjam.yaml.
var f01Logjam = &Preset{
	Name: "f01-logjam", Finding: "F1", Source: mandelbrot, Cores: 16, why: rarelyThrottled("limited"),
	Claim:     "8 pods limited to 1 CPU render the image with a far longer latency tail than 1 unlimited pod, though no pod reaches its limit on average",
	Check:     "p99 (limited) / p99 (unlimited) >= 2 at half-machine load",
	Published: "tail latency up to ~6x the unlimited run at 8 client threads, ~3x at 4",
	quick: func(e *experiment.Experiment, m Machine) (string, error) {
		cores := m.Cores
		pods := max(2, m.Count(8, 2))
		lim, err := config(e, "limited")
		if err != nil {
			return "", err
		}
		lim.Instances = pods
		per := milli(cores * 1000 / 2 / pods)
		lim.CPU.Request, lim.CPU.Limit = per, per
		e.Spec.Loads[0].Workers = pods
		// 100 tiles: with 120 the lead's run of 2026-11-29 settled at its
		// first look with the interval [3.60, 4.16] against the 2 it asks
		// (per repeat 3.92, 3.84, 3.89), room that a sixth fewer tiles
		// keep; fewer than 100 would make the p99 the run's largest
		// latency.
		tileQuick(e, 100)
		return fmt.Sprintf("%d pods of %s CPU (limits still half of %d cores), %d workers (one per pod, as 8 for 8), 100 random tiles, 1 repeat", pods, per, cores, pods), nil
	},
	negative: func(e *experiment.Experiment) error {
		// Limits far above the demand: nothing waits for quota.
		return setLimit(e, "limited", milli(16000))
	},
	verdict: func(r *Results) ([]verdict.Condition, string, error) {
		v, err := p99s(r, "unlimited", "limited")
		if err != nil {
			return nil, "", err
		}
		lim, _ := r.Config("limited")
		c, err := config(r.Spec, "limited")
		if err != nil {
			return nil, "", err
		}
		ratio := v[1] / v[0]
		rc, err := r.latencyRatio("p99 limited / unlimited", "limited", "unlimited", p99Stat, ">=", 2, "twice the reference: a tail that noise alone does not double")
		if err != nil {
			return nil, "", err
		}
		return []verdict.Condition{rc}, fmt.Sprintf("p99 %.0f ms limited against %.0f ms unlimited: %.2fx (needs >= 2); a limited pod used %.2f cores on average against its %.2f limit, and was throttled in %.0f%% of periods",
			v[1], v[0], ratio, lim.MeanCores/float64(c.Instances), cpus(c.CPU.Limit), lim.ThrottledPct), nil
	},
}
