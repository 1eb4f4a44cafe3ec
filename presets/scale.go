package presets

import (
	"errors"
	"fmt"
	"math"

	"github.com/throttlelab/throttlelab/units"
)

// ErrNotFaithful marks a quick variant asked for a machine too small to
// hold the finding's effect: a run there could only say "not reproduced"
// about the machine, not the finding, so none is made.
var ErrNotFaithful = errors.New("not faithful at this scale")

// Faithful is a preset's declared floor for its quick variant: the fewest
// CPUs at which the scaled experiment still has the shape the finding
// needs, and what needs them. The zero value accepts any machine.
type Faithful struct {
	// MinCores is the fewest CPUs (0 or 1: any).
	MinCores int
	// Needs says what needs MinCores ("one pinned core and one for the
	// load generator"), for the refusal.
	Needs string
}

// Machine is the one rule by which a quick variant scales: the original
// machine's CPUs (From) and this one's (Cores). Cores, pods, workers and
// load are written as the original's figures or as fractions of the
// machine, and Machine turns them into this machine's, the same way for
// every preset.
type Machine struct {
	Cores, From int
}

// machine returns the rule for a machine of cores CPUs, or an error
// wrapping ErrNotFaithful when f refuses it.
func (p *Preset) machine(cores int) (Machine, error) {
	m := Machine{Cores: cores, From: p.Cores}
	if f := p.Faithful; f.MinCores > cores {
		return m, fmt.Errorf("%w: needs %d CPUs (%s), this machine has %d", ErrNotFaithful, f.MinCores, f.Needs, cores)
	}
	return m, nil
}

// Factor is this machine's size over the original's.
func (m Machine) Factor() float64 { return float64(m.Cores) / float64(m.From) }

// Count scales a count on the original machine (pods, workers, threads) in
// proportion, rounded half up, and at least lo.
func (m Machine) Count(n, lo int) int {
	return max((n*m.Cores+m.From/2)/m.From, lo)
}

// Share is the CPU amount that is the same share of this machine as cores
// CPUs were of the original one, to the millicore.
func (m Machine) Share(cores float64) units.CPUQuantity {
	return milli(int(math.Round(cores * 1000 * m.Factor())))
}

// Rate scales a request rate in proportion to the machine.
func (m Machine) Rate(perSecond float64) float64 { return perSecond * m.Factor() }

// String is the scale in words, as the cell says it: "2 of the original
// 16 cores (x0.125)".
func (m Machine) String() string {
	return fmt.Sprintf("%d of the original %d cores (x%.3g)", m.Cores, m.From, m.Factor())
}
