package sim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
)

// podGroup makes the pod-level group of a run whose config has a pod block
// (nil without one), for its instances' groups to nest in. Its period phase
// comes from a stream of its own of the repeat's seed, so the instances'
// groups draw the phases they draw without a pod block.
func podGroup(m *Machine, e *experiment.Experiment, run experiment.Run, seed uint64) (*Group, error) {
	if run.Config.Pod == nil {
		return nil, nil
	}
	s, err := e.PodSettings(run.Config)
	if err != nil {
		return nil, err
	}
	g, _, err := groupOf(m, fmt.Sprintf("pod-%s", run.Config.Name), s, rand.New(rand.NewPCG(seed, 0x706f64)))
	return g, err
}

// writePodGroup writes the pod group's record over the run (nothing without
// one, or for a run kept in memory), as the real backends write theirs.
func writePodGroup(m *Machine, pod *Group, run experiment.Run, seconds float64, rw *record.RunWriter) error {
	if pod == nil || rw.Dir() == "" {
		return nil
	}
	s := bandwidthOf(pod)
	g := record.PodGroup{Run: run.ID(), Pod: pod.Name, Group: pod.Name, QuotaUsec: s.QuotaUsec, PeriodUsec: s.PeriodUsec,
		CPUStat: pod.CPUStat(m), WindowSec: seconds}
	if seconds > 0 {
		g.UsageCores = pod.UsageNs / 1e9 / seconds
	}
	b, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return err
	}
	w, err := rw.Create(record.PodGroupFile)
	if err != nil || w == nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
