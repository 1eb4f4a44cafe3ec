package experiments

import (
	"fmt"
	"math"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
)

// f04SingleThread is f04-single-thread.yaml.
var f04SingleThread = &Preset{
	Name: "f04-single-thread", Finding: "F4", Source: mandelbrot, Cores: 16,
	Claim:     "single-threaded pods show rising latency from 2 clients on, because random balancing collides; threaded pods with a limit do better",
	Check:     "at 2 clients, single-thread p99 > threaded p99",
	Published: "single-threaded pods slow from 2 clients on, even with 8-16 pods",
	quick: func(e *experiment.Experiment, cores int) (string, error) {
		for _, n := range []string{"threaded-1cpu", "single"} {
			c, err := config(e, n)
			if err != nil {
				return "", err
			}
			c.Instances = 4
		}
		top := scale(24, cores, 16, 3)
		e.Spec.Loads[0].Ramp = fmt.Sprintf("1:%d", top)
		e.Spec.Loads[0].Step = dur(3 * time.Second)
		e.Spec.Repeats = 1
		return fmt.Sprintf("4 pods per config, ramp 1..%d clients of 3 s each, 1 repeat", top), nil
	},
	verdict: func(r *Results) (bool, string, error) {
		at := func(name string) (float64, error) {
			return r.median(name, func(s *record.Run) float64 {
				for _, st := range s.Summary.Steps {
					if st.Workers == 2 {
						return st.P99Ms
					}
				}
				return math.NaN()
			})
		}
		s, err := at("single")
		if err != nil {
			return false, "", err
		}
		th, err := at("threaded-1cpu")
		if err != nil {
			return false, "", err
		}
		return s > th, fmt.Sprintf("at 2 clients: p99 %.1f ms single-threaded, %.1f ms threaded with a limit", s, th), nil
	},
}
