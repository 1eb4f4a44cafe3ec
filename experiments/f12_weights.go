package experiments

import (
	"fmt"
	"strings"

	"github.com/throttlelab/throttlelab/experiment"
)

// f12Weights is f12-weights.yaml.
var f12Weights = &Preset{
	Name: "f12-weights", Finding: "F12", Source: qosPaper, Cores: 4,
	why: func(r *Results) string {
		return "here the larger weight did shield the server: with weight 10000 its threads won the cores they shared with the BestEffort job"
	},
	Claim:     "a larger weight for the server does not reduce a BestEffort neighbour's interference",
	Check:     "p99 at weight 10000 within 1.2x of p99 at weight 100",
	Published: "weights 100 to 10000 against 1: no improvement",
	// Two repeats: one flips between runs on a noisy 2-core machine.
	quick: func(e *experiment.Experiment, cores int) (string, error) {
		how, err := quickQoS()(e, cores)
		if err != nil {
			return "", err
		}
		e.Spec.Repeats = 2
		return strings.Replace(how, "1 repeat", "2 repeats", 1), nil
	},
	verdict: func(r *Results) (bool, string, error) {
		v, err := p99s(r, "weight-100", "weight-10000")
		if err != nil {
			return false, "", err
		}
		return v[0] <= 1.2*v[1], fmt.Sprintf("p99 %.1f ms at weight 100, %.1f ms at weight 10000: the larger weight is %.2fx better (needs <= 1.2)", v[0], v[1], v[0]/v[1]), nil
	},
}
