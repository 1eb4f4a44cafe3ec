package k8s

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/experiment"
)

// SpecError is a spec that cannot be rendered: a field the cluster cannot
// express, or a name that cannot name a Kubernetes object. Field is the spec
// path (spec.configs[1].cpu.burst).
type SpecError struct {
	Field string
	Msg   string
}

func (e *SpecError) Error() string { return e.Field + ": " + e.Msg }

// checkSpec refuses what a cluster cannot do as the spec says: every refusal
// names the field and says why.
func checkSpec(e *experiment.Experiment) error {
	if err := dnsLabel("metadata.name", e.Metadata.Name); err != nil {
		return err
	}
	for i, l := range e.Spec.Loads {
		if err := dnsLabel(fmt.Sprintf("spec.loads[%d].name", i), l.Name); err != nil {
			return err
		}
	}
	for i, c := range e.Spec.Configs {
		path := fmt.Sprintf("spec.configs[%d]", i)
		if err := dnsLabel(path+".name", c.Name); err != nil {
			return err
		}
		if err := checkCPU(path+".cpu", c.CPU); err != nil {
			return err
		}
		for j, n := range c.Neighbours {
			if err := checkNeighbour(fmt.Sprintf("%s.neighbours[%d]", path, j), n); err != nil {
				return err
			}
		}
	}
	for i, n := range e.Spec.Neighbours {
		if err := checkNeighbour(fmt.Sprintf("spec.neighbours[%d]", i), n); err != nil {
			return err
		}
	}
	return nil
}

func checkNeighbour(path string, n experiment.Neighbour) error {
	if err := dnsLabel(path+".name", n.Name); err != nil {
		return err
	}
	return checkCPU(path+".cpu", n.CPU)
}

// checkCPU refuses the CPU settings a pod spec has no field for.
func checkCPU(path string, c experiment.CPU) error {
	if !c.Cpuset.IsZero() {
		return &SpecError{path + ".cpuset", fmt.Sprintf("%q: a pod cannot name its CPUs; exclusive cores come from the kubelet's static CPU manager, which picks them for a Guaranteed pod with whole CPUs: drop cpuset (and give request = limit = whole CPUs)", c.Cpuset)}
	}
	if c.Burst.Duration > 0 {
		return &SpecError{path + ".burst", fmt.Sprintf("%s: Kubernetes has no API for CPU burst (cpu.max.burst, cpu.cfs_burst_us), the kubelet never sets it: drop burst, or run this spec with throttlelab run or sim", c.Burst.Duration)}
	}
	if p := c.Period.Duration; p != 0 && p != cgroup.DefaultPeriod*time.Microsecond {
		return &SpecError{path + ".period", fmt.Sprintf("%s: the CFS period is the kubelet's (--cpu-cfs-quota-period, one for the whole node, 100ms by default), not a pod's: drop period", p)}
	}
	return nil
}

// dnsLabel checks a spec name that becomes (part of) an object name.
func dnsLabel(field, name string) error {
	if len(validation.IsDNS1123Label(name)) > 0 {
		return &SpecError{field, fmt.Sprintf("%q is not a DNS label, which Kubernetes object names must be: use at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit", name)}
	}
	return nil
}
