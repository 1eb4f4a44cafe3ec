package experiments

import (
	"fmt"
	"math"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
)

// f09BurnFlow is f09-burn-flow.yaml.
var f09BurnFlow = &Preset{
	Name: "f09-burn-flow", Finding: "F9", Source: burnFlow, Cores: 2,
	Claim:     "5 ms requests one at a time: at 0.3 CPU most still take ~5 ms but some ~70 ms; at 0.1 CPU they wait for the next periods",
	Check:     "0.3 CPU: p50 within 1.5x of the 1-CPU p50 and p99 >= 60 ms; 0.1 CPU: latencies cluster near multiples of the period (a third or more wait over half a period, and 80% of those end within 20 ms of a multiple)",
	Published: "1 CPU ~5 ms; 0.3 CPU mean ~14 ms with some ~70 ms; 0.1 CPU mean ~95 ms, gaps at ~100 and ~200 ms",
	quick: func(e *experiment.Experiment, cores int) (string, error) {
		e.Spec.Loads[0].Duration = dur(5 * time.Second)
		return "5 s per config (the original needs no scaling)", nil
	},
	verdict: func(r *Results) (bool, string, error) {
		one, err := r.Config("cpu-1")
		if err != nil {
			return false, "", err
		}
		three, err := r.Config("cpu-300m")
		if err != nil {
			return false, "", err
		}
		lat, err := r.Latencies("cpu-100m")
		if err != nil {
			return false, "", err
		}
		// A request that waits for quota waits for the next period
		// boundary: the slow ones (over half a period) end near a
		// multiple of the period.
		c, err := config(r.Spec, "cpu-100m")
		if err != nil {
			return false, "", err
		}
		period := float64(c.CPU.Period.Duration) / 1e6
		slow, near := 0, 0
		for _, l := range lat {
			if l < period/2 {
				continue
			}
			slow++
			if k := math.Round(l / period); k >= 1 && math.Abs(l-k*period) <= 0.2*period {
				near++
			}
		}
		frac := float64(near) / float64(max(slow, 1))
		slowFrac := float64(slow) / float64(max(len(lat), 1))
		ok := three.P50Ms <= 1.5*one.P50Ms && three.P99Ms >= 60 && slowFrac >= 1.0/3 && frac >= 0.8
		return ok, fmt.Sprintf("p50 %.2f ms at 0.3 CPU against %.2f ms at 1 CPU (%.2fx, needs <= 1.5), p99 %.1f ms (needs >= 60); at 0.1 CPU %.0f%% of %d requests waited over half a period (needs a third), %.0f%% of those ended within 20 ms of a multiple of the %.0f ms period (needs 80%%)",
			three.P50Ms, one.P50Ms, three.P50Ms/one.P50Ms, three.P99Ms, 100*slowFrac, len(lat), 100*frac, period), nil
	},
}
