package presets

import (
	"fmt"
	"slices"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/stats"
	"github.com/throttlelab/throttlelab/units"
	"github.com/throttlelab/throttlelab/verdict"
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
	e.Spec.Workload.Tiles = loadgen.TileSet{Kind: loadgen.TilesSample, Sample: tiles}
	e.Spec.Repeats = 1
}

// presets are the built-in experiments in finding order, one file per finding
// (fNN_*.go) with its claim, scaling and check.
var presets = []*Preset{
	f01Logjam,
	f02LimitSize,
	f03PoolSize,
	f04SingleThread,
	f05Service,
	f05Ingress,
	f06NoisyNeighbour,
	f07SchedBench,
	f08OnoffApi,
	f09BurnFlow,
	f10Besteffort,
	f11Reservations,
	f12Weights,
	f13CpuBurst,
	f14Pinning,
	f15Gomaxprocs,
}

// quickQoS scales the QoS-paper presets from 4 cores: requests, limits and
// neighbour threads in proportion, runs of the given length, one repeat.
func quickQoS(run time.Duration) func(e *experiment.Experiment, m Machine) (string, error) {
	return func(e *experiment.Experiment, m Machine) (string, error) {
		sc := func(q units.CPUQuantity) units.CPUQuantity {
			if q.IsZero() {
				return q
			}
			return m.Share(cpus(q))
		}
		threads := 0
		for i := range e.Spec.Configs {
			c := &e.Spec.Configs[i]
			if !(c.Name == "weight-100" || c.Name == "weight-1000" || c.Name == "weight-10000") {
				c.CPU.Request, c.CPU.Limit = sc(c.CPU.Request), sc(c.CPU.Limit)
			}
			for j := range c.Neighbours {
				n := &c.Neighbours[j]
				n.Threads = m.Count(n.Threads, 1)
				n.CPU.Request, n.CPU.Limit = sc(n.CPU.Request), sc(n.CPU.Limit)
				threads = n.Threads
			}
		}
		e.Spec.Loads[0].Rate = m.Rate(e.Spec.Loads[0].Rate)
		e.Spec.Loads[0].Duration = dur(run)
		e.Spec.Repeats = 1
		return fmt.Sprintf("requests and limits x %d/4, %d neighbour thread(s), %g requests/s, %g s, 1 repeat", m.Cores, threads, e.Spec.Loads[0].Rate, run.Seconds()), nil
	}
}

// quickQoSSettled is the run length of the QoS-paper presets whose checks
// settled at the first look of the quiet run of 2026-11-29 with room to
// spare (F10 2.49x the p99 alone, against at least 1.5): 6 s at 100
// requests/s still gives each p99 600 requests, and the 4 s a run saved go
// to the presets still short of repeats.
const quickQoSSettled = 6 * time.Second

func p99Worse(base, with string, factor float64) func(r *Results) ([]verdict.Condition, string, error) {
	return func(r *Results) ([]verdict.Condition, string, error) {
		v, err := p99s(r, base, with)
		if err != nil {
			return nil, "", err
		}
		c, err := r.latencyRatio(fmt.Sprintf("p99 %s / %s", with, base), with, base, p99Stat, ">=", factor, fmt.Sprintf("the published %gx", factor))
		if err != nil {
			return nil, "", err
		}
		return []verdict.Condition{c}, fmt.Sprintf("p99 %.1f ms alone, %.1f ms with the neighbour: %.2fx (needs >= %g)", v[0], v[1], v[1]/v[0], factor), nil
	}
}

// p99Stat is the p99 as a bootstrap statistic.
var p99Stat = stats.Quantile(99)

// setLimit sets a config's CPU limit (a negative variant's change).
func setLimit(e *experiment.Experiment, name string, limit units.CPUQuantity) error {
	c, err := config(e, name)
	if err != nil {
		return err
	}
	c.CPU.Limit = limit
	return nil
}

// dropNeighbours takes a config's neighbours away (a negative variant's
// change: nothing left to interfere).
func dropNeighbours(name string) func(e *experiment.Experiment) error {
	return func(e *experiment.Experiment) error {
		c, err := config(e, name)
		if err != nil {
			return err
		}
		c.Neighbours = nil
		return nil
	}
}

// stepLatencies is a ramp run's successful latencies (ms) in the step with
// the given number of workers.
func (r *Results) stepLatencies(run *record.Run, workers int) ([]float64, error) {
	recs, err := r.records(run)
	if err != nil {
		return nil, err
	}
	var steps []int
	for _, rec := range recs {
		if !slices.Contains(steps, rec.Step) {
			steps = append(steps, rec.Step)
		}
	}
	slices.Sort(steps)
	want := -1
	for i, st := range run.Summary.Steps {
		if st.Workers == workers && i < len(steps) {
			want = steps[i]
		}
	}
	var v []float64
	for _, rec := range recs {
		if rec.Step == want && rec.Err == "" {
			v = append(v, float64(rec.Latency)/1e6)
		}
	}
	return v, nil
}

// cpus is a CPU amount in cores.
func cpus(q units.CPUQuantity) float64 { return q.Cores() }

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
