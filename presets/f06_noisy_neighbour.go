package presets

import (
	"fmt"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/stats"
	"github.com/throttlelab/throttlelab/units"
	"github.com/throttlelab/throttlelab/verdict"
)

// f06NoisyNeighbour is f06-noisy-neighbour.yaml.
var f06NoisyNeighbour = &Preset{
	Name: "f06-noisy-neighbour", Finding: "F6", Source: mandelbrot, Cores: 16,
	why:       noiseBurstsWhy,
	Claim:     "limits on noisy neighbours did not protect a probe's latency and left CPU idle",
	Check:     "probe p99 with limited noise > 1.1x alone, and more idle CPU with limited than with unlimited noise",
	Published: "limits on the noise pods did not protect the probe and left the machine idle",
	// The study's machine had as many noise workers as cores (4 pods x 4 on
	// 16) and limits adding up to three quarters of it (3 CPUs each). The
	// quick variant keeps both ratios: as many workers as cores, in up to 4
	// pods, each pod limited to three quarters of its workers' cores. (It
	// once kept the 4 pods at 1 worker each on 2 cores: twice the workers per
	// core, and 375m limits, at which the kernel's per-CPU runtime slices
	// let a period hold 0.42 cores, so the limits left half the idle CPU
	// they say.)
	quick: func(e *experiment.Experiment, m Machine) (string, error) {
		all := m.Count(16, 1)
		pods := min(4, all)
		workers := all / pods
		req, lim := m.Share(1), milli(3*workers*1000/4)
		for i := range e.Spec.Configs {
			c := &e.Spec.Configs[i]
			c.CPU.Request = req
			if len(c.Neighbours) > pods {
				c.Neighbours = c.Neighbours[:pods]
			}
			for j := range c.Neighbours {
				n := &c.Neighbours[j]
				n.Workers, n.CPU.Request = workers, req
				if !n.CPU.Limit.IsZero() {
					n.CPU.Limit = lim
				}
			}
		}
		e.Spec.Loads[0].Duration = dur(10 * time.Second)
		e.Spec.Repeats = 2
		return fmt.Sprintf("requests %s, %d noise pod(s) of %d burst worker(s) (as many workers as cores, as 16 on 16), limited to %s CPU each (three quarters of their workers' cores, as 3 CPUs for 4), 10 s, 2 repeats", req, pods, workers, lim), nil
	},
	negative: func(e *experiment.Experiment) error {
		// The limited noise without its limits: it leaves no more CPU idle
		// than the unlimited noise.
		c, err := config(e, "noise-limited")
		if err != nil {
			return err
		}
		for i := range c.Neighbours {
			c.Neighbours[i].CPU.Limit = units.CPUQuantity{}
		}
		return nil
	},
	verdict: func(r *Results) ([]verdict.Condition, string, error) {
		v, err := p99s(r, "alone", "noise", "noise-limited")
		if err != nil {
			return nil, "", err
		}
		bu, err := r.MachineBusy("noise")
		if err != nil {
			return nil, "", err
		}
		bl, err := r.MachineBusy("noise-limited")
		if err != nil {
			return nil, "", err
		}
		cores := float64(r.Env.Cores)
		idleU, idleL := cores-bu, cores-bl
		p, err := r.latencyRatio("probe p99 limited noise / alone", "noise-limited", "alone", p99Stat, ">=", 1.1, "10% slower than alone")
		if err != nil {
			return nil, "", err
		}
		// Busy cores per second of each run, resampled: the difference of
		// the idle CPU must clear 5% of the machine, not just be positive.
		d, _, per, err := r.samplesPer([]string{"noise", "noise-limited"}, stats.Mean, r.busyBlocks)
		if err != nil {
			return nil, "", err
		}
		idle := cond("idle cores limited - unlimited noise", idleL-idleU, stats.Difference(d[0], d[1]), ">=", 0.05*cores,
			fmt.Sprintf("5%% of the machine (%.2f cores) more idle", 0.05*cores))
		idle.PerRepeat = perDiff(per[0], per[1])
		sum := fmt.Sprintf("probe p99 %.1f ms alone, %.1f ms beside noise, %.1f ms beside limited noise (%.2fx alone, needs > 1.1); idle %.2f cores with limited noise against %.2f with unlimited",
			v[0], v[1], v[2], v[2]/v[0], idleL, idleU)
		// How close the limited noise kept to its limits: at small quotas
		// the kernel's per-CPU runtime slices let a period hold noticeably
		// more than the quota, which leaves less idle than the limits say.
		if limit, peak := noiseLimitAndPeak(r, "noise-limited"); limit > 0 && peak > 0 {
			sum += fmt.Sprintf("; a limited noise pod ran at up to %.2f cores within one of its periods against its %g-CPU limit", peak, limit)
		}
		return []verdict.Condition{p, idle}, sum, nil
	},
}

// noiseLimitAndPeak is the smallest CPU limit among a config's neighbours
// (cores) and the highest use any of them reached within one of its own
// periods over the config's runs; zeros when either is unknown.
func noiseLimitAndPeak(r *Results, name string) (limit, peak float64) {
	c, err := config(r.Spec, name)
	if err != nil {
		return 0, 0
	}
	for _, n := range c.Neighbours {
		if n.CPU.Limit.Milli <= 0 {
			continue
		}
		if l := n.CPU.Limit.Cores(); limit == 0 || l < limit {
			limit = l
		}
	}
	for _, run := range r.runsOf(name) {
		for _, u := range run.NeighbourUsage {
			peak = max(peak, u.PeakPeriod)
		}
	}
	return limit, peak
}

// noiseBurstsWhy says, from the noise pods' own bursts, how much CPU the
// limits took from the noise: the CPU each burst got without and with the
// limit, against what its workers would use in the busy phase alone. The
// idle CPU the limits leave is that difference and nothing else, so a
// small one is read here: the unlimited noise held back by the machine it
// shares with the service, or a quota that lets a burst keep most of its
// CPU ("" when the runs have no bursts).
func noiseBurstsWhy(r *Results) string {
	type burst struct{ cpuMs, wantMs float64 }
	per := func(name string) (b burst, pods, n int) {
		c, err := config(r.Spec, name)
		if err != nil {
			return b, 0, 0
		}
		for _, run := range r.runsOf(name) {
			for _, nb := range c.Neighbours {
				cycles, err := record.ReadBurstCycles(record.RunIDDir(r.Dir, run.ID), nb.Name)
				if err != nil {
					continue
				}
				for _, cy := range cycles {
					for _, ms := range cy.CPUMs {
						b.cpuMs += ms
					}
					b.wantMs += cy.BusyWallMs * float64(len(cy.CPUMs))
					n++
				}
			}
		}
		if n > 0 {
			b.cpuMs /= float64(n)
			b.wantMs /= float64(n)
		}
		return b, len(c.Neighbours), n
	}
	u, pods, nu := per("noise")
	l, _, nl := per("noise-limited")
	if nu == 0 || nl == 0 || pods == 0 {
		return ""
	}
	limit, _ := noiseLimitAndPeak(r, "noise-limited")
	c, err := config(r.Spec, "noise-limited")
	if err != nil || len(c.Neighbours) == 0 {
		return ""
	}
	cycle := c.Neighbours[0].Busy.Duration + c.Neighbours[0].Sleep.Duration
	freed := float64(pods) * (u.cpuMs - l.cpuMs) / float64(cycle.Milliseconds())
	return fmt.Sprintf("a noise pod's burst got %.0f ms of CPU without a limit and %.0f ms with its %g-CPU limit, of the %.0f ms its workers would use in the busy phase (%d and %d bursts): "+
		"the limits took %.0f ms a burst, %.3f cores of %d pods (%.1f%% of the %d-core machine); without a limit the pods got %.0f%% of their busy phase's CPU, the rest held back by the machine they share",
		u.cpuMs, l.cpuMs, limit, u.wantMs, nu, nl, u.cpuMs-l.cpuMs, freed, pods, 100*freed/float64(r.Env.Cores), r.Env.Cores, 100*u.cpuMs/u.wantMs)
}
