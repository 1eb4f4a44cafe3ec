package experiments

import (
	"fmt"
	"math"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
)

// f05Service is f05-service.yaml.
var f05Service = &Preset{
	Name: "f05-service", Finding: "F5", Source: mandelbrot, Cores: 16,
	Claim:     "a Service picks a random pod per request: consecutive requests hit the same pod 1/N of the time",
	Check:     "same-pod rate of consecutive requests within 20% of 1/N",
	Published: "1/N: 12.5% for 8 pods",
	quick:     quickRate,
	verdict: func(r *Results) (bool, string, error) {
		return sameRate(r, 1.0)
	},
}

// f05Ingress is f05-ingress.yaml.
var f05Ingress = &Preset{
	Name: "f05-ingress", Finding: "F5", Source: mandelbrot, Cores: 16,
	Claim:     "3 independent round-robin ingresses still send ~(2/3)(1/N) of consecutive requests to the same pod",
	Check:     "same-pod rate of consecutive requests within 20% of (2/3)(1/N)",
	Published: "~8% for 8 pods",
	quick:     quickRate,
	verdict: func(r *Results) (bool, string, error) {
		return sameRate(r, 2.0/3)
	},
}

// quickRate shortens the balancing presets.
func quickRate(e *experiment.Experiment, cores int) (string, error) {
	e.Spec.Loads[0].Rate = 200
	e.Spec.Loads[0].Duration = dur(5 * time.Second)
	return "200 requests/s for 5 s (8 pods need no scaling)", nil
}

func sameRate(r *Results, factor float64) (bool, string, error) {
	c := r.Spec.Spec.Configs[0]
	got, err := r.SameInstance(c.Name)
	if err != nil {
		return false, "", err
	}
	want := factor / float64(c.Instances)
	return math.Abs(got-want) <= 0.2*want, fmt.Sprintf("%.1f%% of consecutive requests went to the same pod (balancer %s, %d pods); expected %.1f%% +- 20%%",
		100*got, r.Spec.Spec.Balancer, c.Instances, 100*want), nil
}
