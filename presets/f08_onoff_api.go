package presets

import (
	"fmt"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/stats"
	"github.com/throttlelab/throttlelab/verdict"
)

// f08OnoffApi is f08-onoff-api.yaml.
var f08OnoffApi = &Preset{
	Name: "f08-onoff-api", Finding: "F8", Source: schedBench, Cores: 4,
	why:       f08Why,
	Claim:     "a 2-CPU limit doubles the mean latency of a web server under bursty clients; 3-4 CPUs cost little",
	Check:     "mean latency (2 CPU) >= 1.5x unlimited; 4 CPU within 1.2x",
	Published: "2-CPU limit: ~5% less throughput, mean latency doubled",
	quick: func(e *experiment.Experiment, m Machine) (string, error) {
		cores := m.Cores
		var got []string
		for _, c := range []struct {
			name string
			cpus int
		}{{"limit-2", 2}, {"limit-4", 4}} {
			m := milli(c.cpus * cores * 1000 / 4)
			cfg, err := config(e, c.name)
			if err != nil {
				return "", err
			}
			cfg.CPU.Limit = m
			got = append(got, m.String())
		}
		e.Spec.Loads[0].Sources = m.Count(64, 8)
		e.Spec.Loads[0].Duration = dur(10 * time.Second)
		e.Spec.Repeats = 1
		// The check reads the smallest and the largest limit: the middle
		// one would cost a quarter of every repeat and judge nothing.
		dropConfigs(e, "limit-3")
		return fmt.Sprintf("limits %s / %s CPU (2 and 4 of 4 cores, scaled to %d; the 3-CPU config left out: the check does not read it), %d sources, 10 s, 1 repeat", got[0], got[1], cores, e.Spec.Loads[0].Sources), nil
	},
	negative: func(e *experiment.Experiment) error {
		// The smallest limit far above the demand: the mean does not rise.
		return setLimit(e, "limit-2", milli(64000))
	},
	verdict: func(r *Results) ([]verdict.Condition, string, error) {
		var m [3]float64
		for i, n := range []string{"unlimited", "limit-2", "limit-4"} {
			v, err := r.MeanLatency(n)
			if err != nil {
				return nil, "", err
			}
			m[i] = v
		}
		small, err := r.latencyRatio("mean smallest limit / unlimited", "limit-2", "unlimited", stats.Mean, ">=", 1.5, "half again the reference's mean")
		if err != nil {
			return nil, "", err
		}
		large, err := r.latencyRatio("mean largest limit / unlimited", "limit-4", "unlimited", stats.Mean, "<=", 1.2, "within 20% of the reference")
		if err != nil {
			return nil, "", err
		}
		return []verdict.Condition{small, large}, fmt.Sprintf("mean latency %.2f ms unlimited, %.2f ms at the smallest limit (%.2fx, needs >= 1.5), %.2f ms at the largest (%.2fx, needs <= 1.2)",
			m[0], m[1], m[1]/m[0], m[2], m[2]/m[0]), nil
	},
}

// f08Why reads the largest limit against the machine. On the original
// 4-core node the 4-CPU limit was the whole node, as 2 CPUs are on a
// 2-core machine: a quota that large cannot bind (the node has no more
// CPU time per period to give), so the scale keeps the check's shape and
// any difference from unlimited there is not the limit's. The reading
// says so from the run's own throttled periods.
func f08Why(r *Results) string {
	c, err := config(r.Spec, "limit-4")
	if err != nil || c.CPU.Limit.IsZero() {
		return ""
	}
	s, err := r.Config("limit-4")
	if err != nil {
		return ""
	}
	limit := cpus(c.CPU.Limit)
	if r.Env.Cores > 0 && limit >= float64(r.Env.Cores) && s.ThrottledPct < 1 {
		return fmt.Sprintf("the largest limit, %.2f CPUs on this %d-CPU machine, was throttled in %.1f%% of periods: a quota as large as the machine cannot bind, so its mean's difference from unlimited is not the limit's: it is noise between runs, other work on the host, or the load generator sharing the machine", limit, r.Env.Cores, s.ThrottledPct)
	}
	if s.ThrottledPct >= 1 {
		return fmt.Sprintf("the largest limit, %.2f CPUs, was throttled in %.1f%% of periods", limit, s.ThrottledPct)
	}
	return ""
}
