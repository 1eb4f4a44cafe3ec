package experiments

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
)

const (
	mandelbrot = "Mandelbrot study"
	schedBench = "sched-bench"
	burnFlow   = "CPU-burn flow study"
	qosPaper   = "QoS paper"
	burstStudy = "CPU Burst study"
)

// p99 returns a config's p99 (median over repeats), or the error.
func p99(r *Results, name string) (float64, error) {
	c, err := r.Config(name)
	return c.P99Ms, err
}

// p99s returns the p99 of several configs.
func p99s(r *Results, names ...string) ([]float64, error) {
	out := make([]float64, len(names))
	for i, n := range names {
		v, err := p99(r, n)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func dur(d time.Duration) experiment.Duration { return experiment.Duration{Duration: d} }

// tileQuick shrinks a tile experiment: a random sample of tiles, one repeat.
func tileQuick(e *experiment.Experiment, tiles int) {
	e.Spec.Workload.Tiles = fmt.Sprintf("sample:%d", tiles)
	e.Spec.Repeats = 1
}

var presets = []*Preset{
	{
		Name: "f01-logjam", Finding: "F1", Source: mandelbrot, Cores: 16, why: rarelyThrottled("limited"),
		Claim:     "8 pods limited to 1 CPU render the image with a far longer latency tail than 1 unlimited pod, though no pod reaches its limit on average",
		Check:     "p99 (limited) / p99 (unlimited) >= 2 at half-machine load",
		Published: "tail latency up to ~6x the unlimited run at 8 client threads, ~3x at 4",
		quick: func(e *experiment.Experiment, cores int) string {
			pods := max(2, scale(8, cores, 16, 2))
			lim := config(e, "limited")
			lim.Instances = pods
			per := milli(cores * 1000 / 2 / pods)
			lim.CPU.Request, lim.CPU.Limit = per, per
			e.Spec.Loads[0].Workers = pods
			tileQuick(e, 300)
			return fmt.Sprintf("%d pods of %s CPU (limits still half of %d cores), %d workers (one per pod, as 8 for 8), 300 random tiles, 1 repeat", pods, per, cores, pods)
		},
		verdict: func(r *Results) (bool, string, error) {
			v, err := p99s(r, "unlimited", "limited")
			if err != nil {
				return false, "", err
			}
			lim, _ := r.Config("limited")
			c := config(r.Spec, "limited")
			ratio := v[1] / v[0]
			return ratio >= 2, fmt.Sprintf("p99 %.0f ms limited against %.0f ms unlimited: %.2fx (needs >= 2); a limited pod used %.2f cores on average against its %.2f limit, and was throttled in %.0f%% of periods",
				v[1], v[0], ratio, lim.MeanCores/float64(c.Instances), cpus(c.CPU.Limit), lim.ThrottledPct), nil
		},
	},
	{
		Name: "f02-limit-size", Finding: "F2", Source: mandelbrot, Cores: 16, why: rarelyThrottled("limit-1"),
		Claim:     "raising the limit per pod reduces the harm; 4 CPUs x 8 pods (twice the machine) almost removes it",
		Check:     "p99 falls as the limit rises; the largest limit is within 1.3x of unlimited",
		Published: "4 CPUs x 8 pods almost removes the harm, but total render time is still >10% up",
		quick: func(e *experiment.Experiment, cores int) string {
			pods := 2
			var got []string
			for _, c := range []struct {
				name string
				cpus int
			}{{"limit-1", 1}, {"limit-2", 2}, {"limit-4", 4}} {
				// The same share of the machine: cpus x 8 pods of 16 cores.
				m := c.cpus * 8 * cores * 1000 / 16 / pods
				cfg := config(e, c.name)
				cfg.Instances, cfg.CPU.Limit = pods, milli(m)
				got = append(got, milli(m))
			}
			e.Spec.Loads[0].Workers = pods
			tileQuick(e, 200)
			return fmt.Sprintf("%d pods each at %s / %s / %s CPU (the same shares of %d cores as 1/2/4 CPUs x 8 pods of 16), %d workers, 200 random tiles, 1 repeat",
				pods, got[0], got[1], got[2], cores, pods)
		},
		verdict: func(r *Results) (bool, string, error) {
			v, err := p99s(r, "unlimited", "limit-1", "limit-2", "limit-4")
			if err != nil {
				return false, "", err
			}
			falls := v[1] > v[3] && v[2] <= 1.05*v[1] && v[3] <= 1.05*v[2]
			close := v[3] <= 1.3*v[0]
			return falls && close, fmt.Sprintf("p99 %.0f / %.0f / %.0f ms from the smallest limit to the largest (falls: %v), unlimited %.0f ms: largest limit at %.2fx (needs <= 1.3)",
				v[1], v[2], v[3], falls, v[0], v[3]/v[0]), nil
		},
	},
	{
		Name: "f03-pool-size", Finding: "F3", Source: mandelbrot, Cores: 16, why: rarelyThrottled("4x4cpu"),
		Claim:     "with limits adding up to the machine, fewer larger pools beat more smaller ones, and limits are worse than running out of CPU",
		Check:     "p99: 2 big pools < 4 small pools; unlimited overload < limited",
		Published: "2 x 8 CPUs better than 4 x 4 CPUs; unlimited pods under overload better than either",
		quick: func(e *experiment.Experiment, cores int) string {
			small, big := milli(4*cores*1000/16), milli(8*cores*1000/16)
			config(e, "4x4cpu").CPU.Limit = small
			config(e, "2x8cpu").CPU.Limit = big
			e.Spec.Loads[0].Workers = scale(20, cores, 16, 2)
			tileQuick(e, 200)
			return fmt.Sprintf("4 pods of %s against 2 of %s CPU (both add up to %d cores), %d workers (20 of 16), 200 random tiles, 1 repeat",
				small, big, cores, e.Spec.Loads[0].Workers)
		},
		verdict: func(r *Results) (bool, string, error) {
			v, err := p99s(r, "unlimited", "4x4cpu", "2x8cpu")
			if err != nil {
				return false, "", err
			}
			ok := v[2] < v[1] && v[0] < math.Min(v[1], v[2])
			return ok, fmt.Sprintf("p99 4 small pools %.0f ms, 2 big pools %.0f ms, unlimited %.0f ms", v[1], v[2], v[0]), nil
		},
	},
	{
		Name: "f04-single-thread", Finding: "F4", Source: mandelbrot, Cores: 16,
		Claim:     "single-threaded pods show rising latency from 2 clients on, because random balancing collides; threaded pods with a limit do better",
		Check:     "at 2 clients, single-thread p99 > threaded p99",
		Published: "single-threaded pods slow from 2 clients on, even with 8-16 pods",
		quick: func(e *experiment.Experiment, cores int) string {
			for _, n := range []string{"threaded-1cpu", "single"} {
				config(e, n).Instances = 4
			}
			top := scale(24, cores, 16, 3)
			e.Spec.Loads[0].Ramp = fmt.Sprintf("1:%d", top)
			e.Spec.Loads[0].Step = dur(3 * time.Second)
			e.Spec.Repeats = 1
			return fmt.Sprintf("4 pods per config, ramp 1..%d clients of 3 s each, 1 repeat", top)
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
	},
	{
		Name: "f05-service", Finding: "F5", Source: mandelbrot, Cores: 16,
		Claim:     "a Service picks a random pod per request: consecutive requests hit the same pod 1/N of the time",
		Check:     "same-pod rate of consecutive requests within 20% of 1/N",
		Published: "1/N: 12.5% for 8 pods",
		quick:     quickRate,
		verdict: func(r *Results) (bool, string, error) {
			return sameRate(r, 1.0)
		},
	},
	{
		Name: "f05-ingress", Finding: "F5", Source: mandelbrot, Cores: 16,
		Claim:     "3 independent round-robin ingresses still send ~(2/3)(1/N) of consecutive requests to the same pod",
		Check:     "same-pod rate of consecutive requests within 20% of (2/3)(1/N)",
		Published: "~8% for 8 pods",
		quick:     quickRate,
		verdict: func(r *Results) (bool, string, error) {
			return sameRate(r, 2.0/3)
		},
	},
	{
		Name: "f06-noisy-neighbour", Finding: "F6", Source: mandelbrot, Cores: 16,
		Claim:     "limits on noisy neighbours did not protect a probe's latency and left CPU idle",
		Check:     "probe p99 with limited noise > 1.1x alone, and more idle CPU with limited than with unlimited noise",
		Published: "limits on the noise pods did not protect the probe and left the machine idle",
		quick: func(e *experiment.Experiment, cores int) string {
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
			return fmt.Sprintf("requests %s, noise limits %s CPU (1 and 3 of 16 cores, scaled to %d), %d burst worker(s) per noise pod, 10 s, 1 repeat", req, lim, cores, workers)
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
	},
	{
		Name: "f07-sched-bench", Finding: "F7", Source: schedBench, Cores: 4,
		Claim:     "a 2-CPU limit cuts the goodput of 200 ms bursts by ~43% although the 1 s average use is under 1 core",
		Check:     "goodput (limited) / goodput (unlimited) between 0.45 and 0.75; 100 ms usage peaks at the limit while the 1 s average stays below it",
		Published: "goodput per burst ~4M -> ~2.3M iterations (-43%)",
		quick: func(e *experiment.Experiment, cores int) string {
			workers := scale(4, cores, 4, 1)
			lim := milli(2 * cores * 1000 / 4)
			for i := range e.Spec.Configs {
				n := &e.Spec.Configs[i].Neighbours[0]
				n.Workers = workers
				if n.CPU.Limit != "" {
					n.CPU.Limit = lim
				}
			}
			e.Spec.Loads[0].Duration = dur(11 * time.Second)
			return fmt.Sprintf("%d burst workers and a %s-CPU limit (4 and 2 of 4 cores, scaled to %d), 11 s (5 bursts)", workers, lim, cores)
		},
		verdict: func(r *Results) (bool, string, error) {
			gu, nu, err := r.BurstGoodput("unlimited", "burst")
			if err != nil {
				return false, "", err
			}
			gl, nl, err := r.BurstGoodput("limit-2", "burst")
			if err != nil {
				return false, "", err
			}
			u, err := r.NeighbourUsage("limit-2", "burst")
			if err != nil {
				return false, "", err
			}
			c := config(r.Spec, "limit-2").Neighbours[0]
			limit := cpus(c.CPU.Limit)
			ratio := gl / gu
			ok := ratio >= 0.45 && ratio <= 0.75 && u.Peak100ms >= 0.9*limit && u.Peak1s < limit
			return ok, fmt.Sprintf("goodput %.0f M iterations per burst limited against %.0f M unlimited (%d and %d bursts): %.2f (needs 0.45-0.75); limited burst used %.2f cores at its 100 ms peak and %.2f over its busiest second, limit %.2f",
				gl/1e6, gu/1e6, nl, nu, ratio, u.Peak100ms, u.Peak1s, limit), nil
		},
	},
	{
		Name: "f08-onoff-api", Finding: "F8", Source: schedBench, Cores: 4,
		Claim:     "a 2-CPU limit doubles the mean latency of a web server under bursty clients; 3-4 CPUs cost little",
		Check:     "mean latency (2 CPU) >= 1.5x unlimited; 4 CPU within 1.2x",
		Published: "2-CPU limit: ~5% less throughput, mean latency doubled",
		quick: func(e *experiment.Experiment, cores int) string {
			var got []string
			for _, c := range []struct {
				name string
				cpus int
			}{{"limit-2", 2}, {"limit-3", 3}, {"limit-4", 4}} {
				m := milli(c.cpus * cores * 1000 / 4)
				config(e, c.name).CPU.Limit = m
				got = append(got, m)
			}
			e.Spec.Loads[0].Sources = scale(64, cores, 4, 8)
			e.Spec.Loads[0].Duration = dur(10 * time.Second)
			e.Spec.Repeats = 1
			return fmt.Sprintf("limits %s / %s / %s CPU (2, 3, 4 of 4 cores, scaled to %d), %d sources, 10 s, 1 repeat", got[0], got[1], got[2], cores, e.Spec.Loads[0].Sources)
		},
		verdict: func(r *Results) (bool, string, error) {
			var m [3]float64
			for i, n := range []string{"unlimited", "limit-2", "limit-4"} {
				v, err := r.MeanLatency(n)
				if err != nil {
					return false, "", err
				}
				m[i] = v
			}
			ok := m[1] >= 1.5*m[0] && m[2] <= 1.2*m[0]
			return ok, fmt.Sprintf("mean latency %.2f ms unlimited, %.2f ms at the smallest limit (%.2fx, needs >= 1.5), %.2f ms at the largest (%.2fx, needs <= 1.2)",
				m[0], m[1], m[1]/m[0], m[2], m[2]/m[0]), nil
		},
	},
	{
		Name: "f09-burn-flow", Finding: "F9", Source: burnFlow, Cores: 2,
		Claim:     "5 ms requests one at a time: at 0.3 CPU most still take ~5 ms but some ~70 ms; at 0.1 CPU they wait for the next periods",
		Check:     "0.3 CPU: p50 within 1.5x of the 1-CPU p50 and p99 >= 60 ms; 0.1 CPU: latencies cluster near multiples of the period (a third or more wait over half a period, and 80% of those end within 20 ms of a multiple)",
		Published: "1 CPU ~5 ms; 0.3 CPU mean ~14 ms with some ~70 ms; 0.1 CPU mean ~95 ms, gaps at ~100 and ~200 ms",
		quick: func(e *experiment.Experiment, cores int) string {
			e.Spec.Loads[0].Duration = dur(5 * time.Second)
			return "5 s per config (the original needs no scaling)"
		},
		verdict: func(r *Results) (bool, string, error) {
			one, err := r.Config("cpu-1")
			if err != nil {
				return false, "", err
			}
			three, err := r.Config("cpu-0.3")
			if err != nil {
				return false, "", err
			}
			lat, err := r.Latencies("cpu-0.1")
			if err != nil {
				return false, "", err
			}
			// A request that waits for quota waits for the next period
			// boundary: the slow ones (over half a period) end near a
			// multiple of the period.
			period := float64(config(r.Spec, "cpu-0.1").CPU.Period.Duration) / 1e6
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
	},
	{
		Name: "f10-besteffort", Finding: "F10", Source: qosPaper, Cores: 4,
		Claim:     "a BestEffort job (weight 2) doubles a 2-core server's tail: weights are enforced per core, so a core runs the BestEffort thread while server threads queue elsewhere",
		Check:     "server p99 with the BestEffort neighbour >= 1.5x alone, despite a weight ratio >= 79:1",
		Published: "mean ~7 -> ~15 ms, p99 ~10 -> ~25 ms",
		quick:     quickQoS(),
		verdict:   p99Worse("alone", "besteffort", 1.5),
	},
	{
		Name: "f11-reservations", Finding: "F11", Source: qosPaper, Cores: 4,
		Claim:     "a Burstable neighbour's load raises a Guaranteed service's latency although each requests half the cores",
		Check:     "service1 p99 under service2 load >= 1.5x alone",
		Published: "service1 mean 6 -> 9.5 ms, p99 7 -> 22 ms",
		quick:     quickQoS(),
		verdict:   p99Worse("alone", "service2-load", 1.5),
	},
	{
		Name: "f12-weights", Finding: "F12", Source: qosPaper, Cores: 4,
		why: func(r *Results) string {
			return "here the larger weight did shield the server: with weight 10000 its threads won the cores they shared with the BestEffort job"
		},
		Claim:     "a larger weight for the server does not reduce a BestEffort neighbour's interference",
		Check:     "p99 at weight 10000 within 1.2x of p99 at weight 100",
		Published: "weights 100 to 10000 against 1: no improvement",
		// Two repeats: one flips between runs on a noisy 2-core machine.
		quick: func(e *experiment.Experiment, cores int) string {
			how := quickQoS()(e, cores)
			e.Spec.Repeats = 2
			return strings.Replace(how, "1 repeat", "2 repeats", 1)
		},
		verdict: func(r *Results) (bool, string, error) {
			v, err := p99s(r, "weight-100", "weight-10000")
			if err != nil {
				return false, "", err
			}
			return v[0] <= 1.2*v[1], fmt.Sprintf("p99 %.1f ms at weight 100, %.1f ms at weight 10000: the larger weight is %.2fx better (needs <= 1.2)", v[0], v[1], v[0]/v[1]), nil
		},
	},
	{
		Name: "f13-cpu-burst", Finding: "F13", Source: burstStudy, Cores: 8, NeedsBurst: true, why: rarelyThrottled("no-burst"),
		Claim:     "CPU burst removes most throttling and cuts tail latency at the same average CPU; 1 s averages hide 100 ms peaks above the limit",
		Check:     "p99 with burst <= 0.8x without; throttled periods drop >= 50%; 100 ms peak usage > limit > 1 s average",
		Published: "usage averaging 2.5 cores over 1 s peaks above 4 cores in 100 ms windows; burst removes most throttling",
		quick: func(e *experiment.Experiment, cores int) string {
			lim := milli(4 * cores * 1000 / 8)
			for i := range e.Spec.Configs {
				c := &e.Spec.Configs[i]
				c.CPU.Limit = lim
				if c.CPU.Burst.Duration > 0 {
					c.CPU.Burst = dur(time.Duration(4*cores) * 100 * time.Millisecond / 8)
				}
			}
			// The same 40 sources, each sending less: the bursts keep their
			// shape against the smaller limit.
			l := &e.Spec.Loads[0]
			l.Rate = l.Rate * float64(cores) / 8
			l.Duration = dur(10 * time.Second)
			e.Spec.Repeats = 1
			return fmt.Sprintf("limit %s CPU with a burst of one quota (4 of 8 cores, scaled to %d), 40 sources at %g requests/s each while on, 10 s, 1 repeat", lim, cores, l.Rate)
		},
		verdict: func(r *Results) (bool, string, error) {
			nb, err := r.Config("no-burst")
			if err != nil {
				return false, "", err
			}
			b, err := r.Config("burst")
			if err != nil {
				return false, "", err
			}
			limit := cpus(config(r.Spec, "burst").CPU.Limit)
			ok := b.P99Ms <= 0.8*nb.P99Ms && b.ThrottledPct <= 0.5*nb.ThrottledPct && nb.Peak100msCores > limit && limit > nb.MeanCores
			return ok, fmt.Sprintf("p99 %.1f ms with burst against %.1f ms without (%.2fx, needs <= 0.8); throttled periods %.1f%% against %.1f%% (needs half or less); without burst: 100 ms peak %.2f cores, limit %.2f, mean %.2f",
				b.P99Ms, nb.P99Ms, b.P99Ms/nb.P99Ms, b.ThrottledPct, nb.ThrottledPct, nb.Peak100msCores, limit, nb.MeanCores), nil
		},
	},
	{
		Name: "f14-pinning", Finding: "F14", Source: burstStudy, Cores: 4,
		why: func(r *Results) string {
			s, err1 := r.Config("shared")
			p, err2 := r.Config("pinned")
			if err1 != nil || err2 != nil {
				return ""
			}
			if p.ThrottledPct >= 1 {
				return fmt.Sprintf("the pinned container was throttled in %.1f%% of periods: it has a quota as well as its cores", p.ThrottledPct)
			}
			if p.P99Ms < 0.9*s.P99Ms {
				return fmt.Sprintf("the pinned cores served the requests sooner: in the shared pool they ran in parallel on every core until the quota ran out, then all waited for the next period (throttled in %.0f%% of periods)", s.ThrottledPct)
			}
			return ""
		},
		Claim:     "pinned threads queue on their cores while the shared pool serves them at once: pinning is no cure for throttling latency",
		Check:     "pinned: no throttled periods, yet p99 no better than 0.9x the shared pool's with an equal limit",
		Published: "4 requests of 60 ms to a 2-CPU container: pinned no faster than shared",
		quick: func(e *experiment.Experiment, cores int) string {
			n := max(1, cores/2)
			m := milli(n * 1000)
			for i := range e.Spec.Configs {
				c := &e.Spec.Configs[i]
				c.CPU.Request = m
				if c.CPU.Limit != "" {
					c.CPU.Limit = m
				}
				if c.CPU.Cpuset != "" {
					c.CPU.Cpuset = fmt.Sprintf("%d-%d", cores-n, cores-1)
					if n == 1 {
						c.CPU.Cpuset = fmt.Sprint(cores - 1)
					}
				}
			}
			e.Spec.Loads[0].Step = dur(6 * time.Second)
			e.Spec.Repeats = 1
			return fmt.Sprintf("a %s-CPU container (2 of 4 cores, scaled to %d), pinned to CPU %s, 6 s, 1 repeat", m, cores, config(e, "pinned").CPU.Cpuset)
		},
		verdict: func(r *Results) (bool, string, error) {
			s, err := r.Config("shared")
			if err != nil {
				return false, "", err
			}
			p, err := r.Config("pinned")
			if err != nil {
				return false, "", err
			}
			ok := p.ThrottledPct < 1 && p.P99Ms >= 0.9*s.P99Ms
			return ok, fmt.Sprintf("pinned: %.1f%% of periods throttled (needs none, under 1%%), p99 %.0f ms against %.0f ms shared (%.2fx, needs >= 0.9)",
				p.ThrottledPct, p.P99Ms, s.P99Ms, p.P99Ms/s.P99Ms), nil
		},
	},
}

// quickRate shortens the balancing presets.
func quickRate(e *experiment.Experiment, cores int) string {
	e.Spec.Loads[0].Rate = 200
	e.Spec.Loads[0].Duration = dur(5 * time.Second)
	return "200 requests/s for 5 s (8 pods need no scaling)"
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

// quickQoS scales the QoS-paper presets from 4 cores: requests, limits and
// neighbour threads in proportion, 10 s, one repeat.
func quickQoS() func(e *experiment.Experiment, cores int) string {
	return func(e *experiment.Experiment, cores int) string {
		sc := func(q string) string {
			if q == "" {
				return ""
			}
			return milli(int(math.Round(cpus(q) * 1000 * float64(cores) / 4)))
		}
		threads := 0
		for i := range e.Spec.Configs {
			c := &e.Spec.Configs[i]
			if !(c.Name == "weight-100" || c.Name == "weight-1000" || c.Name == "weight-10000") {
				c.CPU.Request, c.CPU.Limit = sc(c.CPU.Request), sc(c.CPU.Limit)
			}
			for j := range c.Neighbours {
				n := &c.Neighbours[j]
				n.Threads = scale(n.Threads, cores, 4, 1)
				n.CPU.Request, n.CPU.Limit = sc(n.CPU.Request), sc(n.CPU.Limit)
				threads = n.Threads
			}
		}
		e.Spec.Loads[0].Rate = e.Spec.Loads[0].Rate * float64(cores) / 4
		e.Spec.Loads[0].Duration = dur(10 * time.Second)
		e.Spec.Repeats = 1
		return fmt.Sprintf("requests and limits x %d/4, %d neighbour thread(s), %g requests/s, 10 s, 1 repeat", cores, threads, e.Spec.Loads[0].Rate)
	}
}

func p99Worse(base, with string, factor float64) func(r *Results) (bool, string, error) {
	return func(r *Results) (bool, string, error) {
		v, err := p99s(r, base, with)
		if err != nil {
			return false, "", err
		}
		return v[1] >= factor*v[0], fmt.Sprintf("p99 %.1f ms alone, %.1f ms with the neighbour: %.2fx (needs >= %g)", v[0], v[1], v[1]/v[0], factor), nil
	}
}

// cpus parses a Kubernetes CPU amount ("500m", "2") into cores.
func cpus(q string) float64 {
	m, err := cgroup.ParseMilliCPU(q)
	if err != nil {
		return 0
	}
	return float64(m) / 1000
}

// rarelyThrottled explains a failed limit check whose limited config was
// seldom throttled: the load did not reach the quota.
func rarelyThrottled(config string) func(r *Results) string {
	return func(r *Results) string {
		c, err := r.Config(config)
		if err != nil || c.ThrottledPct >= 5 {
			return ""
		}
		return fmt.Sprintf("%s was throttled in only %.1f%% of periods: the load seldom reached its quota", config, c.ThrottledPct)
	}
}
