package experiments

import (
	"fmt"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
)

// f06NoisyNeighbour is f06-noisy-neighbour.yaml.
var f06NoisyNeighbour = &Preset{
	Name: "f06-noisy-neighbour", Finding: "F6", Source: mandelbrot, Cores: 16,
	Claim:     "limits on noisy neighbours did not protect a probe's latency and left CPU idle",
	Check:     "probe p99 with limited noise > 1.1x alone, and more idle CPU with limited than with unlimited noise",
	Published: "limits on the noise pods did not protect the probe and left the machine idle",
	quick: func(e *experiment.Experiment, cores int) (string, error) {
		req, lim := milli(cores*1000/16), milli(3*cores*1000/16)
		workers := scale(4, cores, 16, 1)
		for i := range e.Spec.Configs {
			c := &e.Spec.Configs[i]
			c.CPU.Request = req
			for j := range c.Neighbours {
				n := &c.Neighbours[j]
				n.Workers, n.CPU.Request = workers, req
				if n.CPU.Limit != "" {
					n.CPU.Limit = lim
				}
			}
		}
		e.Spec.Loads[0].Duration = dur(10 * time.Second)
		e.Spec.Repeats = 1
		return fmt.Sprintf("requests %s, noise limits %s CPU (1 and 3 of 16 cores, scaled to %d), %d burst worker(s) per noise pod, 10 s, 1 repeat", req, lim, cores, workers), nil
	},
	verdict: func(r *Results) (bool, string, error) {
		v, err := p99s(r, "alone", "noise", "noise-limited")
		if err != nil {
			return false, "", err
		}
		bu, err := r.MachineBusy("noise")
		if err != nil {
			return false, "", err
		}
		bl, err := r.MachineBusy("noise-limited")
		if err != nil {
			return false, "", err
		}
		cores := float64(r.Env.Cores)
		idleU, idleL := cores-bu, cores-bl
		ok := v[2] > 1.1*v[0] && idleL > idleU
		return ok, fmt.Sprintf("probe p99 %.1f ms alone, %.1f ms beside noise, %.1f ms beside limited noise (%.2fx alone, needs > 1.1); idle %.2f cores with limited noise against %.2f with unlimited",
			v[0], v[1], v[2], v[2]/v[0], idleL, idleU), nil
	},
}
