package presets

import (
	"fmt"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/units"
	"github.com/throttlelab/throttlelab/verdict"
)

// f03PoolSize is f03-pool-size.yaml.
var f03PoolSize = &Preset{
	Name: "f03-pool-size", Finding: "F3", Source: mandelbrot, Cores: 16, why: rarelyThrottled("4x4cpu"),
	Claim:     "with limits adding up to the machine, fewer larger pools beat more smaller ones, and limits are worse than running out of CPU",
	Check:     "p99: 2 big pools < 4 small pools; unlimited overload < limited",
	Published: "2 x 8 CPUs better than 4 x 4 CPUs; unlimited pods under overload better than either",
	quick: func(e *experiment.Experiment, m Machine) (string, error) {
		small, big := m.Share(4), m.Share(8)
		for name, limit := range map[string]units.CPUQuantity{"4x4cpu": small, "2x8cpu": big} {
			c, err := config(e, name)
			if err != nil {
				return "", err
			}
			c.CPU.Limit = limit
		}
		e.Spec.Loads[0].Workers = m.Count(20, 2)
		tileQuick(e, 100)
		return fmt.Sprintf("4 pods of %s against 2 of %s CPU (both add up to %d cores), %d workers (20 of 16), 100 random tiles, 1 repeat",
			small, big, m.Cores, e.Spec.Loads[0].Workers), nil
	},
	negative: func(e *experiment.Experiment) error {
		// The limits swapped: the 2 "big" pools get the small limit.
		a, err := config(e, "4x4cpu")
		if err != nil {
			return err
		}
		b, err := config(e, "2x8cpu")
		if err != nil {
			return err
		}
		a.CPU.Limit, b.CPU.Limit = b.CPU.Limit, a.CPU.Limit
		return nil
	},
	verdict: func(r *Results) ([]verdict.Condition, string, error) {
		v, err := p99s(r, "unlimited", "4x4cpu", "2x8cpu")
		if err != nil {
			return nil, "", err
		}
		big, err := r.latencyRatio("p99 2 big / 4 small pools", "2x8cpu", "4x4cpu", p99Stat, "<=", 0.95, "better by 5% or more")
		if err != nil {
			return nil, "", err
		}
		// Below the big pools is below both when they beat the small ones.
		un, err := r.latencyRatio("p99 unlimited / 2 big pools", "unlimited", "2x8cpu", p99Stat, "<=", 0.95, "better by 5% or more")
		if err != nil {
			return nil, "", err
		}
		return []verdict.Condition{big, un}, fmt.Sprintf("p99 4 small pools %.0f ms, 2 big pools %.0f ms, unlimited %.0f ms", v[1], v[2], v[0]), nil
	},
}
