package limitmap

import (
	"testing"

	"github.com/throttlelab/throttlelab/runner"
	"github.com/throttlelab/throttlelab/sim"
)

// simBackend is the simulator as the machine a map measures on, so
// Measure runs without cgroups.
func simBackend(t testing.TB) func() runner.Backend {
	return func() runner.Backend { return sim.NewBackend(sim.Options{Cores: 2, Costs: sim.DefaultCosts()}) }
}
