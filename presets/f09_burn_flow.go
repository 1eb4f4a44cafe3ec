package presets

import (
	"fmt"
	"math"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/stats"
	"github.com/throttlelab/throttlelab/verdict"
)

// f09BurnFlow is f09-burn-flow.yaml.
var f09BurnFlow = &Preset{
	Name: "f09-burn-flow", Finding: "F9", Source: burnFlow, Cores: 2,
	Claim:     "5 ms requests one at a time: at 0.3 CPU most still take ~5 ms but some ~70 ms; at 0.1 CPU they wait for the next periods",
	Check:     "0.3 CPU: p50 within 1.5x of the 1-CPU p50 and p99 >= 60 ms; 0.1 CPU: latencies cluster near multiples of the period (a third or more wait over half a period, and 80% of those end within 20 ms of a multiple)",
	Published: "1 CPU ~5 ms; 0.3 CPU mean ~14 ms with some ~70 ms; 0.1 CPU mean ~95 ms, gaps at ~100 and ~200 ms",
	quick: func(e *experiment.Experiment, m Machine) (string, error) {
		e.Spec.Loads[0].Duration = dur(5 * time.Second)
		return "5 s per config (the original needs no scaling)", nil
	},
	negative: func(e *experiment.Experiment) error {
		// Every config at 1 CPU, far above one 5 ms request at a time:
		// nothing waits for the next period.
		for i := range e.Spec.Configs {
			e.Spec.Configs[i].CPU.Limit = milli(1000)
		}
		return nil
	},
	verdict: func(r *Results) ([]verdict.Condition, string, error) {
		one, err := r.Config("cpu-1")
		if err != nil {
			return nil, "", err
		}
		three, err := r.Config("cpu-300m")
		if err != nil {
			return nil, "", err
		}
		lat, err := r.Latencies("cpu-100m")
		if err != nil {
			return nil, "", err
		}
		// A request that waits for quota waits for the next period
		// boundary: the slow ones (over half a period) end near a
		// multiple of the period.
		c, err := config(r.Spec, "cpu-100m")
		if err != nil {
			return nil, "", err
		}
		period := float64(c.CPU.Period.Duration) / 1e6
		isSlow := func(l float64) bool { return l >= period/2 }
		isNear := func(l float64) bool {
			k := math.Round(l / period)
			return k >= 1 && math.Abs(l-k*period) <= 0.2*period
		}
		slow, near := 0, 0
		for _, l := range lat {
			if !isSlow(l) {
				continue
			}
			slow++
			if isNear(l) {
				near++
			}
		}
		frac := float64(near) / float64(max(slow, 1))
		slowFrac := float64(slow) / float64(max(len(lat), 1))
		p50, err := r.latencyRatio("p50 0.3 CPU / 1 CPU", "cpu-300m", "cpu-1", stats.Quantile(50), "<=", 1.5, "the published 1.5x")
		if err != nil {
			return nil, "", err
		}
		p99, err := r.latencyOf("p99 ms at 0.3 CPU", "cpu-300m", p99Stat, ">=", 60, "most of a 100 ms period's wait")
		if err != nil {
			return nil, "", err
		}
		// Shares of requests, resampled as 0/1 indicators.
		indicator := func(keep, hit func(float64) bool) func(run *record.Run) ([]float64, error) {
			return func(run *record.Run) ([]float64, error) {
				recs, err := r.records(run)
				var v []float64
				for _, rec := range recs {
					if l := float64(rec.Latency) / 1e6; rec.Err == "" && keep(l) {
						if hit(l) {
							v = append(v, 1)
						} else {
							v = append(v, 0)
						}
					}
				}
				return v, err
			}
		}
		all := func(float64) bool { return true }
		ds, _, dper, err := r.samplesPer([]string{"cpu-100m"}, stats.Mean, indicator(all, isSlow))
		if err != nil {
			return nil, "", err
		}
		share := cond("share waiting over half a period at 0.1 CPU", slowFrac, ds[0], ">=", 1.0/3, "a third of the requests")
		share.PerRepeat = dper[0]
		conds := []verdict.Condition{p50, p99, share}
		if slow > 0 {
			dn, _, nper, err := r.samplesPer([]string{"cpu-100m"}, stats.Mean, indicator(isSlow, isNear))
			if err != nil {
				return nil, "", err
			}
			near := cond("share of those near a multiple of the period", frac, dn[0], ">=", 0.8, "four in five")
			near.PerRepeat = nper[0]
			conds = append(conds, near)
		} else {
			conds = append(conds, cond("share of those near a multiple of the period", 0, nil, ">=", 0.8, "four in five"))
		}
		return conds, fmt.Sprintf("p50 %.2f ms at 0.3 CPU against %.2f ms at 1 CPU (%.2fx, needs <= 1.5), p99 %.1f ms (needs >= 60); at 0.1 CPU %.0f%% of %d requests waited over half a period (needs a third), %.0f%% of those ended within 20 ms of a multiple of the %.0f ms period (needs 80%%)",
			three.P50Ms, one.P50Ms, three.P50Ms/one.P50Ms, three.P99Ms, 100*slowFrac, len(lat), 100*frac, period), nil
	},
}
