package presets

import (
	"fmt"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/units"
	"github.com/throttlelab/throttlelab/verdict"
)

// f15Gomaxprocs is f15-gomaxprocs.yaml: F3's and F4's effect (one thread,
// or a small pool, queues requests a larger one serves at once) through
// the Go runtime's GOMAXPROCS under one limit, not through pods.
var f15Gomaxprocs = &Preset{
	Name: "f15-gomaxprocs", Finding: "F15", Source: mandelbrot, Cores: 2,
	Faithful:  Faithful{MinCores: 2, Needs: "two of the server's threads running at once"},
	Claim:     "under one 1-CPU limit at half its load, GOMAXPROCS=1 queues 5 ms requests that 2 or 8 threads serve at once: the single-thread effect of F4 through the runtime",
	Check:     "p99 GOMAXPROCS=1 >= 1.2x GOMAXPROCS=2 and >= 1.2x GOMAXPROCS=8, all under the same limit and load",
	Published: "not measured through GOMAXPROCS by the study: single-threaded pods queue from 2 clients on (F4), and fewer larger pools beat more smaller ones (F3)",
	quick: func(e *experiment.Experiment, m Machine) (string, error) {
		e.Spec.Loads[0].Duration = dur(10 * time.Second)
		e.Spec.Repeats = 2
		return "10 s per config, 2 repeats (one server under one limit: the original needs no scaling)", nil
	},
	negative: func(e *experiment.Experiment) error {
		// The single thread taken away: GOMAXPROCS=1's config runs 2
		// threads like the next one, so nothing queues behind one thread.
		c, err := config(e, "gomaxprocs-1")
		if err != nil {
			return err
		}
		c.Server.GOMAXPROCS, err = units.FixedGOMAXPROCS(2)
		return err
	},
	verdict: func(r *Results) ([]verdict.Condition, string, error) {
		v, err := p99s(r, "gomaxprocs-1", "gomaxprocs-2", "gomaxprocs-8")
		if err != nil {
			return nil, "", err
		}
		two, err := r.latencyRatio("p99 GOMAXPROCS=1 / GOMAXPROCS=2", "gomaxprocs-1", "gomaxprocs-2", p99Stat, ">=", 1.2, "20% slower: more than a draw of the same distribution")
		if err != nil {
			return nil, "", err
		}
		eight, err := r.latencyRatio("p99 GOMAXPROCS=1 / GOMAXPROCS=8", "gomaxprocs-1", "gomaxprocs-8", p99Stat, ">=", 1.2, "20% slower: more than a draw of the same distribution")
		if err != nil {
			return nil, "", err
		}
		return []verdict.Condition{two, eight}, fmt.Sprintf("p99 %.1f ms at GOMAXPROCS=1, %.1f ms at 2, %.1f ms at 8", v[0], v[1], v[2]), nil
	},
}
