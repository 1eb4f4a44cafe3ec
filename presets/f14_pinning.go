package presets

import (
	"fmt"
	"math"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/verdict"
)

// f14Pinning is f14-pinning.yaml.
var f14Pinning = &Preset{
	Name: "f14-pinning", Finding: "F14", Source: burstStudy, Cores: 4,
	why: func(r *Results) string {
		s, err1 := r.Config("shared")
		p, err2 := r.Config("pinned")
		if err1 != nil || err2 != nil {
			return ""
		}
		if p.ThrottledPct >= 1 {
			return fmt.Sprintf("the pinned container was throttled in %.1f%% of periods: it has a quota as well as its cores", p.ThrottledPct)
		}
		if p.P99Ms < 0.9*s.P99Ms {
			// What the shared pool did, from its own figures: how wide it
			// ran at its peak and how often it then waited for quota.
			how := fmt.Sprintf("ran on up to %.2f cores at its 100 ms peak", s.Peak100msCores)
			if c, err := config(r.Spec, "shared"); err == nil && !c.CPU.Limit.IsZero() {
				how += fmt.Sprintf(" against its %.2f-CPU limit", cpus(c.CPU.Limit))
			}
			if s.ThrottledPct >= 1 {
				how += fmt.Sprintf(", spent its quota early and waited for the next period in %.0f%% of periods", s.ThrottledPct)
			}
			return fmt.Sprintf("the pinned cores served the requests sooner (p99 %.0f ms against %.0f ms): the shared pool %s", p.P99Ms, s.P99Ms, how)
		}
		return ""
	},
	Claim:     "pinned threads queue on their cores while the shared pool serves them at once: pinning is no cure for throttling latency",
	Check:     "pinned: no throttled periods, yet p99 no better than 0.9x the shared pool's with an equal limit",
	Published: "4 requests of 60 ms to a 2-CPU container: pinned no faster than shared",
	// The pinned cores are exclusive: the load generator and everything
	// else run beside them, so on one CPU the pinned container would hold
	// the whole machine and the shared pool's limit would be all of it.
	Faithful: Faithful{MinCores: 2, Needs: "the pinned cores and at least one outside them for the load generator and the shared pool to spread onto"},
	quick: func(e *experiment.Experiment, mc Machine) (string, error) {
		cores := mc.Cores
		n := min(mc.Count(2, 1), cores-1)
		m := milli(n * 1000)
		for i := range e.Spec.Configs {
			c := &e.Spec.Configs[i]
			c.CPU.Request = m
			if !c.CPU.Limit.IsZero() {
				c.CPU.Limit = m
			}
			if !c.CPU.Cpuset.IsZero() {
				c.CPU.Cpuset = experiment.CPURange(cores-n, cores-1)
			}
		}
		e.Spec.Loads[0].Step = dur(6 * time.Second)
		// Three repeats: one run's interval straddled the 0.9 threshold.
		e.Spec.Repeats = 3
		pinned, err := config(e, "pinned")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("a %s-CPU container (2 of 4 cores, scaled), pinned to CPU %s, 6 s, 3 repeats", m, pinned.CPU.Cpuset), nil
	},
	negative: func(e *experiment.Experiment) error {
		// A quota on the pinned container too, half its cores: it is
		// throttled. (A quota of all its cores would not be: they cannot
		// use more than their own time, in the kernel or the simulator.)
		c, err := config(e, "pinned")
		if err != nil {
			return err
		}
		half := milli(int(math.Round(cpus(c.CPU.Request) * 1000 / 2)))
		c.CPU.Request, c.CPU.Limit = half, half
		return nil
	},
	verdict: func(r *Results) ([]verdict.Condition, string, error) {
		s, err := r.Config("shared")
		if err != nil {
			return nil, "", err
		}
		p, err := r.Config("pinned")
		if err != nil {
			return nil, "", err
		}
		ratio, err := r.latencyRatio("p99 pinned / shared", "pinned", "shared", p99Stat, ">=", 0.9, "no more than 10% better")
		// The finding's effect sits at its threshold (0.91 measured, 0.83
		// simulated, 2026-11-29): within 0.05 of 0.9 the finding does not
		// say which side, and no budget settles it, so such an interval is
		// "not reproduced" with that reason (verdict.Condition.Indifference).
		if err != nil {
			return nil, "", err
		}
		ratio.Indifference = 0.05
		conds := []verdict.Condition{cond("pinned throttled periods %", p.ThrottledPct, nil, "<=", 1, "under 1% of periods (a count, no interval)"), ratio}
		return conds, fmt.Sprintf("pinned: %.1f%% of periods throttled (needs none, under 1%%), p99 %.0f ms against %.0f ms shared (%.2fx, needs >= 0.9)",
			p.ThrottledPct, p.P99Ms, s.P99Ms, p.P99Ms/s.P99Ms), nil
	},
}
