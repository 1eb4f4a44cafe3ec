package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/throttlelab/throttlelab/experiment"
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
