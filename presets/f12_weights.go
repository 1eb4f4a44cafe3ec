package presets

import (
	"fmt"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/verdict"
)

// f12Weights is f12-weights.yaml.
var f12Weights = &Preset{
	Name: "f12-weights", Finding: "F12", Source: qosPaper, Cores: 4,
	why:       weightsWhy,
	negative:  dropNeighbours("weight-10000"),
	Claim:     "a larger weight for the server does not reduce a BestEffort neighbour's interference",
	Check:     "p99 at weight 10000 within 1.2x of p99 at weight 100",
	Published: "weights 100 to 10000 against 1: no improvement",
	// 5 s a config (500 requests at 100/s) and six repeats: the p99
	// ratio's spread between repeats is not the sampling of one run's
	// tail but what differs from run to run (measured on the 2-core
	// reference machine, 2026-11-29: the log ratio's spread 0.128 over 8
	// repeats of 5 s, against 0.17 pooled over 9 degrees of freedom of
	// 10 s runs), so shorter runs buy more repeats for the time, and the
	// check needs them: with four repeats of 10 s one run flipped, and
	// most left the interval straddling the 1.2 margin. Six repeats of
	// 5 s cost 73 s against four of 10 s's 88. The weight-1000 config is
	// left out, as the check does not read it: a third less per repeat.
	quick: func(e *experiment.Experiment, m Machine) (string, error) {
		how, err := quickQoS(5*time.Second)(e, m)
		if err != nil {
			return "", err
		}
		e.Spec.Repeats = 6
		dropConfigs(e, "weight-1000")
		return strings.Replace(how, "1 repeat", "6 repeats, weights 100 and 10000 (the check reads no other)", 1), nil
	},
	verdict: func(r *Results) ([]verdict.Condition, string, error) {
		v, err := p99s(r, "weight-100", "weight-10000")
		if err != nil {
			return nil, "", err
		}
		c, err := r.latencyRatio("p99 weight 100 / weight 10000", "weight-100", "weight-10000", p99Stat, "<=", 1.2, "the larger weight at most 20% better")
		if err != nil {
			return nil, "", err
		}
		// The finding is that a larger weight does not help; 1.2 is where
		// "does not help" was drawn, not a figure of the study's, so
		// within 0.1 of it (10% to 30% better) the finding does not say
		// which side (verdict.Condition.Indifference). The simulation
		// ended its last look on [0.983, 1.28] (2026-11-29).
		c.Indifference = 0.1
		return []verdict.Condition{c}, fmt.Sprintf("p99 %.1f ms at weight 100, %.1f ms at weight 10000: the larger weight is %.2fx better (needs <= 1.2)", v[0], v[1], v[0]/v[1]), nil
	},
}

// weightsWhy says, from the results, where the weight-100 server's extra
// tail came from: how much CPU the BestEffort job got beside each weight,
// and how long the server's requests stalled (runnable, not running).
func weightsWhy(r *Results) string {
	// A config without the neighbour (changed by hand) had 0 cores of it.
	lo, _ := r.NeighbourUsage("weight-100", "batch")
	hi, _ := r.NeighbourUsage("weight-10000", "batch")
	s100, err1 := r.meanStall("weight-100")
	s10k, err2 := r.meanStall("weight-10000")
	if err1 != nil || err2 != nil {
		return ""
	}
	what := "the BestEffort job got about as much CPU beside either weight"
	if hi.Mean < 0.9*lo.Mean {
		what = "the larger weight took CPU from the BestEffort job"
	} else if hi.Mean > 1.1*lo.Mean {
		what = "the BestEffort job got more CPU beside the larger weight"
	}
	return fmt.Sprintf("%s (%.2f cores beside weight 100, %.2f beside weight 10000); the server's requests stalled %.2f ms on average at weight 100 against %.2f ms at weight 10000",
		what, lo.Mean, hi.Mean, s100, s10k)
}
