package experiments

import (
	"fmt"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
)

// f13CpuBurst is f13-cpu-burst.yaml.
var f13CpuBurst = &Preset{
	Name: "f13-cpu-burst", Finding: "F13", Source: burstStudy, Cores: 8, NeedsBurst: true, why: rarelyThrottled("no-burst"),
	Claim:     "CPU burst removes most throttling and cuts tail latency at the same average CPU; 1 s averages hide 100 ms peaks above the limit",
	Check:     "p99 with burst <= 0.8x without; throttled periods drop >= 50%; 100 ms peak usage > limit > 1 s average",
	Published: "usage averaging 2.5 cores over 1 s peaks above 4 cores in 100 ms windows; burst removes most throttling",
	quick: func(e *experiment.Experiment, cores int) (string, error) {
		lim := milli(4 * cores * 1000 / 8)
		for i := range e.Spec.Configs {
			c := &e.Spec.Configs[i]
			c.CPU.Limit = lim
			if c.CPU.Burst.Duration > 0 {
				c.CPU.Burst = dur(time.Duration(4*cores) * 100 * time.Millisecond / 8)
			}
		}
		// The same 40 sources, each sending less: the bursts keep their
		// shape against the smaller limit.
		l := &e.Spec.Loads[0]
		l.Rate = l.Rate * float64(cores) / 8
		l.Duration = dur(10 * time.Second)
		e.Spec.Repeats = 1
		return fmt.Sprintf("limit %s CPU with a burst of one quota (4 of 8 cores, scaled to %d), 40 sources at %g requests/s each while on, 10 s, 1 repeat", lim, cores, l.Rate), nil
	},
	verdict: func(r *Results) (bool, string, error) {
		nb, err := r.Config("no-burst")
		if err != nil {
			return false, "", err
		}
		b, err := r.Config("burst")
		if err != nil {
			return false, "", err
		}
		c, err := config(r.Spec, "burst")
		if err != nil {
			return false, "", err
		}
		limit := cpus(c.CPU.Limit)
		ok := b.P99Ms <= 0.8*nb.P99Ms && b.ThrottledPct <= 0.5*nb.ThrottledPct && nb.Peak100msCores > limit && limit > nb.MeanCores
		return ok, fmt.Sprintf("p99 %.1f ms with burst against %.1f ms without (%.2fx, needs <= 0.8); throttled periods %.1f%% against %.1f%% (needs half or less); without burst: 100 ms peak %.2f cores, limit %.2f, mean %.2f",
			b.P99Ms, nb.P99Ms, b.P99Ms/nb.P99Ms, b.ThrottledPct, nb.ThrottledPct, nb.Peak100msCores, limit, nb.MeanCores), nil
	},
}
