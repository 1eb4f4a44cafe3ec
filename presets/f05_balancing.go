package presets

import (
	"fmt"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/stats"
	"github.com/throttlelab/throttlelab/verdict"
)

// f05Service is f05-service.yaml.
var f05Service = &Preset{
	Name: "f05-service", Finding: "F5", Source: mandelbrot, Cores: 16, SelfCheck: true, negative: roundRobin,
	Claim:     "a Service picks a random pod per request: consecutive requests hit the same pod 1/N of the time",
	Check:     "same-pod rate of consecutive requests within 20% of 1/N",
	Published: "1/N: 12.5% for 8 pods",
	quick:     quickRate,
	verdict: func(r *Results) ([]verdict.Condition, string, error) {
		return sameRate(r, 1.0)
	},
}

// f05Ingress is f05-ingress.yaml.
var f05Ingress = &Preset{
	Name: "f05-ingress", Finding: "F5", Source: mandelbrot, Cores: 16, SelfCheck: true, negative: roundRobin,
	Claim:     "3 independent round-robin ingresses still send ~(2/3)(1/N) of consecutive requests to the same pod",
	Check:     "same-pod rate of consecutive requests within 20% of (2/3)(1/N)",
	Published: "~8% for 8 pods",
	quick:     quickRate,
	verdict: func(r *Results) ([]verdict.Condition, string, error) {
		return sameRate(r, 2.0/3)
	},
}

// quickRate shortens the balancing presets. The same-pod rate is a count
// of pairs of consecutive requests, whose spread within a repeat is the
// binomial one: 3000 pairs (300 requests/s for 10 s) left a repeat's rate
// 0.006 either way, so three repeats' interval straddled the 20% margins.
// The requests cost the 8 API pods next to nothing, so the quick run sends
// 2000 requests/s for 5 s: 10000 pairs a repeat, a spread under 0.0035, in
// half the time.
func quickRate(e *experiment.Experiment, _ Machine) (string, error) {
	e.Spec.Loads[0].Rate = 2000
	e.Spec.Loads[0].Duration = dur(5 * time.Second)
	e.Spec.Repeats = 3
	return "2000 requests/s for 5 s (8 pods need no scaling; the rate only adds pairs of consecutive requests), 3 repeats", nil
}

// roundRobin is the balancing presets' negative variant: one round robin
// never sends two consecutive requests to the same pod.
func roundRobin(e *experiment.Experiment) error {
	e.Spec.Balancer = loadgen.BalancerSpec{Kind: loadgen.BalanceRoundRobin}
	return nil
}

// sameRate checks the balancer's same-pod rate of consecutive requests. It
// is a self-check: the balancers are throttlelab's own code (and unit
// tested); what the kernel decides does not enter it.
func sameRate(r *Results, factor float64) ([]verdict.Condition, string, error) {
	c := r.Spec.Spec.Configs[0]
	d, v, per, err := r.samplesPer([]string{c.Name}, stats.Mean, r.sameInstance)
	if err != nil {
		return nil, "", err
	}
	got := v[0]
	want := factor / float64(c.Instances)
	cd := cond("same-pod rate", got, d[0], "between", 0.8*want, "within 20% of the expected rate")
	cd.High = 1.2 * want
	cd.PerRepeat = per[0]
	return []verdict.Condition{cd}, fmt.Sprintf("%.1f%% of consecutive requests went to the same pod (balancer %s, %d pods); expected %.1f%% +- 20%%",
		100*got, r.Spec.Spec.Balancer, c.Instances, 100*want), nil
}
