package presets

import (
	"fmt"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/verdict"
)

// f02LimitSize is f02-limit-size.yaml.
var f02LimitSize = &Preset{
	Name: "f02-limit-size", Finding: "F2", Source: mandelbrot, Cores: 16, why: rarelyThrottled("limit-1"),
	Claim:     "raising the limit per pod reduces the harm; 4 CPUs x 8 pods (twice the machine) almost removes it",
	Check:     "p99 falls as the limit rises; the largest limit is within 1.3x of unlimited",
	Published: "4 CPUs x 8 pods almost removes the harm, but total render time is still >10% up",
	quick: func(e *experiment.Experiment, m Machine) (string, error) {
		cores := m.Cores
		pods := 2
		var got []string
		for _, c := range []struct {
			name string
			cpus int
		}{{"limit-1", 1}, {"limit-2", 2}, {"limit-4", 4}} {
			// The same share of the machine as cpus x 8 pods of the
			// original's, split among this machine's pods (Machine's rule).
			lim := m.Share(float64(c.cpus*8) / float64(pods))
			cfg, err := config(e, c.name)
			if err != nil {
				return "", err
			}
			cfg.Instances, cfg.CPU.Limit = pods, lim
			got = append(got, lim.String())
		}
		e.Spec.Loads[0].Workers = pods
		tileQuick(e, 100)
		return fmt.Sprintf("%d pods each at %s / %s / %s CPU (the same shares of %d cores as 1/2/4 CPUs x 8 pods of 16), %d workers, 100 random tiles, 1 repeat",
			pods, got[0], got[1], got[2], cores, pods), nil
	},
	negative: func(e *experiment.Experiment) error {
		// The limits reversed: the "largest" is now the smallest, so p99
		// rises with the limit's name.
		a, err := config(e, "limit-1")
		if err != nil {
			return err
		}
		b, err := config(e, "limit-4")
		if err != nil {
			return err
		}
		a.CPU.Limit, b.CPU.Limit = b.CPU.Limit, a.CPU.Limit
		return nil
	},
	verdict: func(r *Results) ([]verdict.Condition, string, error) {
		v, err := p99s(r, "unlimited", "limit-1", "limit-2", "limit-4")
		if err != nil {
			return nil, "", err
		}
		var conds []verdict.Condition
		for _, c := range []struct {
			name, num, den, op string
			thr                float64
			margin             string
		}{
			{"p99 largest / smallest limit", "limit-4", "limit-1", "<=", 0.95, "falls by 5% or more over the range"},
			{"p99 middle / smallest limit", "limit-2", "limit-1", "<=", 1.05, "does not rise by over 5%"},
			{"p99 largest / middle limit", "limit-4", "limit-2", "<=", 1.05, "does not rise by over 5%"},
			{"p99 largest limit / unlimited", "limit-4", "unlimited", "<=", 1.3, "the published 1.3x"},
		} {
			rc, err := r.latencyRatio(c.name, c.num, c.den, p99Stat, c.op, c.thr, c.margin)
			if err != nil {
				return nil, "", err
			}
			conds = append(conds, rc)
		}
		falls := v[3] <= 0.95*v[1] && v[2] <= 1.05*v[1] && v[3] <= 1.05*v[2]
		return conds, fmt.Sprintf("p99 %.0f / %.0f / %.0f ms from the smallest limit to the largest (falls: %v), unlimited %.0f ms: largest limit at %.2fx (needs <= 1.3)",
			v[1], v[2], v[3], falls, v[0], v[3]/v[0]), nil
	},
}
