package experiment

import (
	"fmt"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/loadgen"
)

// Run is one run of an experiment: one config under one load, one repeat.
type Run struct {
	// Index is the run's place in the order runs are done.
	Index  int
	Config Config
	Load   Load
	// Repeat counts from 1.
	Repeat int
}

// ID names the run, and its directory in the results: config/load/rN.
func (r Run) ID() string { return fmt.Sprintf("%s/%s/r%d", r.Config.Name, r.Load.Name, r.Repeat) }

// Runs returns the experiment's runs in the order they are done: configs crossed
// with loads, repeated; interleaved (every config once, then again) or grouped
// (each config's repeats together).
func (e *Experiment) Runs() []Run {
	s := e.Spec
	var runs []Run
	add := func(c Config, l Load, rep int) {
		runs = append(runs, Run{Index: len(runs), Config: c, Load: l, Repeat: rep})
	}
	if s.Order == "grouped" {
		for _, c := range s.Configs {
			for _, l := range s.Loads {
				for rep := 1; rep <= s.Repeats; rep++ {
					add(c, l, rep)
				}
			}
		}
		return runs
	}
	for rep := 1; rep <= s.Repeats; rep++ {
		for _, l := range s.Loads {
			for _, c := range s.Configs {
				add(c, l, rep)
			}
		}
	}
	return runs
}

// Settings returns the cgroup settings and QoS class of a config's instances.
func (e *Experiment) Settings(c Config) (cgroup.Settings, cgroup.QoSClass, error) {
	k, err := c.CPU.Kube()
	if err != nil {
		return cgroup.Settings{}, "", err
	}
	return k.Settings(cgroup.WeightMapping(e.Spec.WeightMapping))
}

// PodSettings returns the cgroup settings of the pod-level group of a config
// with a pod block (its quota over all the instances, the shares of its
// request, the instances' period), as the kubelet writes them on the pod's
// cgroup. It is an error for a config without one.
func (e *Experiment) PodSettings(c Config) (cgroup.Settings, error) {
	if c.Pod == nil {
		return cgroup.Settings{}, fmt.Errorf("config %s has no pod block", c.Name)
	}
	k, err := c.Pod.CPU.Kube()
	if err != nil {
		return cgroup.Settings{}, err
	}
	s, _, err := k.Settings(cgroup.WeightMapping(e.Spec.WeightMapping))
	return s, err
}

// NeighbourSettings returns the cgroup settings of a neighbour's group.
func (e *Experiment) NeighbourSettings(n Neighbour) (cgroup.Settings, error) {
	k, err := n.CPU.Kube()
	if err != nil {
		return cgroup.Settings{}, err
	}
	s, _, err := k.Settings(cgroup.WeightMapping(e.Spec.WeightMapping))
	return s, err
}

// ProbeConfig is the load of a probe neighbour beside load lc: /api requests
// at the probe's rate, round robin over the instances, for the load's
// duration (10 s if it has none).
func ProbeConfig(lc loadgen.Config, probe Neighbour) loadgen.Config {
	pc := lc
	pc.Mode, pc.Rate, pc.Requests, pc.Balancer, pc.Records = loadgen.ModeProbe, probe.Rate, 0, loadgen.BalancerSpec{Kind: loadgen.BalanceRoundRobin}, nil
	if pc.Duration == 0 {
		pc.Duration = 10 * time.Second
	}
	pc.Workload = loadgen.WorkloadSpec{Kind: loadgen.KindAPI}
	return pc
}

// CheckCPUs checks that every cpuset of the experiment names CPUs that a
// machine of cores CPUs (numbered 0 to cores-1) has: the host of a local run,
// or the simulated machine. The error is a *SpecError pointing at the cpuset.
func (e *Experiment) CheckCPUs(cores int) error {
	check := func(c CPU, path string) error {
		if c.Cpuset.IsZero() {
			return nil
		}
		if top := c.Cpuset.Top; top >= cores {
			return &SpecError{File: e.file, Line: lineOf(e.lines, path), Path: path,
				Msg: fmt.Sprintf("cpuset %s names CPU %d, which a machine of %d CPUs (0-%d) does not have", c.Cpuset, top, cores, cores-1)}
		}
		return nil
	}
	neighbours := func(ns []Neighbour, path string) error {
		for i, n := range ns {
			if err := check(n.CPU, fmt.Sprintf("%s[%d].cpu.cpuset", path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	for i, c := range e.Spec.Configs {
		if err := check(c.CPU, fmt.Sprintf("spec.configs[%d].cpu.cpuset", i)); err != nil {
			return err
		}
		if err := neighbours(c.Neighbours, fmt.Sprintf("spec.configs[%d].neighbours", i)); err != nil {
			return err
		}
	}
	return neighbours(e.Spec.Neighbours, "spec.neighbours")
}

// RefusePod returns a *SpecError at the first config with a pod block, for a
// backend that cannot apply a pod-level limit (see PodUnapplied): running the
// instances without it would measure something else. Nil if none has one.
func (e *Experiment) RefusePod(backend string) error {
	for i, c := range e.Spec.Configs {
		if c.Pod != nil {
			path := fmt.Sprintf("spec.configs[%d].pod", i)
			return &SpecError{File: e.file, Line: lineOf(e.lines, path), Path: path,
				Msg: fmt.Sprintf("the %s backend does not apply a pod-level limit yet: run it with the local backend, or drop the pod block", backend)}
		}
	}
	return nil
}
