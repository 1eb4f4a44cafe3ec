package presets

import (
	"fmt"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/stats"
	"github.com/throttlelab/throttlelab/verdict"
)

// f04Clients is the ramp's step at which F4's check compares the pods.
const f04Clients = 2

// f04SingleThread is f04-single-thread.yaml.
var f04SingleThread = &Preset{
	Name: "f04-single-thread", Finding: "F4", Source: mandelbrot, Cores: 16,
	Claim:     "single-threaded pods show rising latency from 2 clients on, because random balancing collides; threaded pods with a limit do better",
	Check:     "at 2 clients, single-thread p99 > threaded p99",
	Published: "single-threaded pods slow from 2 clients on, even with 8-16 pods",
	quick: func(e *experiment.Experiment, _ Machine) (string, error) {
		for _, n := range []string{"threaded-1cpu", "single"} {
			c, err := config(e, n)
			if err != nil {
				return "", err
			}
			c.Instances = 4
		}
		// The check reads the p99 at 2 clients of these two configs only:
		// the quick run holds 2 clients for the whole step, which gives the
		// p99 more than twice the requests a ramp's 3 s step at 2 gave, and
		// leaves out the unlimited pod and the other steps (the full
		// preset's curve).
		dropConfigs(e, "unlimited")
		e.Spec.Reference = "threaded-1cpu"
		e.Spec.Loads[0].Ramp = loadgen.Ramp{From: f04Clients, To: f04Clients}
		e.Spec.Loads[0].Step = dur(8 * time.Second)
		e.Spec.Repeats = 1
		return fmt.Sprintf("4 pods per config, %d clients for 8 s (the step the check reads; the unlimited pod and the rest of the ramp left out), 1 repeat", f04Clients), nil
	},
	negative: func(e *experiment.Experiment) error {
		// The threaded pods starved by a tenth of a CPU each: they are the
		// slow ones now.
		return setLimit(e, "threaded-1cpu", milli(100))
	},
	verdict: func(r *Results) ([]verdict.Condition, string, error) {
		d, v, per, err := r.samplesPer([]string{"single", "threaded-1cpu"}, p99Stat, func(run *record.Run) ([]float64, error) {
			return r.stepLatencies(run, f04Clients)
		})
		if err != nil {
			return nil, "", err
		}
		s, th := v[0], v[1]
		c := cond("p99 at 2 clients single / threaded", s/th, stats.Ratio(d[0], d[1]), ">=", 1.1, "10% slower: more than a draw of the same distribution")
		c.PerRepeat, c.LogScale = perRatio(per[0], per[1]), true
		return []verdict.Condition{c}, fmt.Sprintf("at 2 clients: p99 %.1f ms single-threaded, %.1f ms threaded with a limit", s, th), nil
	},
}
