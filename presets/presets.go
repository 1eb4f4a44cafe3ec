package presets

import (
	"embed"
	"fmt"
	"slices"
	"strings"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/units"
	"github.com/throttlelab/throttlelab/verdict"
)

//go:embed *.yaml
var specs embed.FS

// Preset is a built-in experiment that reproduces a published finding.
type Preset struct {
	// Name is the spec's metadata.name and the file's name (without .yaml).
	Name string
	// Finding is its id in docs/findings.md (F1..F14); Source the study's
	// Name (Studies).
	Finding, Source string
	// Claim is the finding in one line; Check the test a run must pass.
	Claim, Check string
	// Published are the original figures, in words.
	Published string
	// Cores is the size of the original machine: the simulator's default.
	Cores int
	// NeedsBurst marks presets that need the kernel's CPU burst support.
	NeedsBurst bool
	// Faithful is the fewest CPUs at which the quick variant keeps the
	// finding's shape; Quick refuses smaller machines (ErrNotFaithful).
	Faithful Faithful
	// quick shrinks the spec for the machine m by m's rule (Machine), to
	// finish in a few minutes, and says how.
	quick func(e *experiment.Experiment, m Machine) (string, error)
	// SelfCheck marks a preset that checks throttlelab's own machinery
	// (its balancers) rather than something the kernel decides.
	SelfCheck bool
	// verdict computes the check's conditions from what was measured, and
	// the figures behind them in words.
	verdict func(r *Results) ([]verdict.Condition, string, error)
	// why, if set, explains a check that did not pass, from the same
	// results ("" if it cannot tell).
	why func(r *Results) string
	// negative changes the quick spec so that the finding cannot hold (a
	// limit far above the demand, the noise taken away): the check must
	// say not reproduced on it (TestNegativeVariants).
	negative func(e *experiment.Experiment) error
}

// All returns the presets in finding order.
func All() []*Preset { return presets }

// Lookup finds a preset by name.
func Lookup(name string) (*Preset, bool) {
	for _, p := range presets {
		if p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// Names lists the preset names, for messages.
func Names() string {
	var n []string
	for _, p := range presets {
		n = append(n, p.Name)
	}
	return strings.Join(n, ", ")
}

// YAML returns the preset's embedded spec, as a user would copy it.
func (p *Preset) YAML() ([]byte, error) { return specs.ReadFile(p.Name + ".yaml") }

// Spec returns the experiment at its original scale.
func (p *Preset) Spec() (*experiment.Experiment, error) {
	b, err := p.YAML()
	if err != nil {
		return nil, err
	}
	return experiment.Parse(b, p.Name+".yaml")
}

// Quick returns the experiment scaled to a machine with cores CPUs, to
// finish in about 3 minutes on 2 cores, and a sentence on how it was scaled
// that starts with the scale ("at 2 of the original 16 cores (x0.125): ...").
// A machine under the preset's Faithful floor is refused with an error
// wrapping ErrNotFaithful, before anything runs.
func (p *Preset) Quick(cores int) (*experiment.Experiment, string, error) {
	if cores < 1 || cores > units.MaxCPUs {
		return nil, "", fmt.Errorf("preset %s, quick variant for %d cores: want 1 to %d cores", p.Name, cores, units.MaxCPUs)
	}
	m, err := p.machine(cores)
	if err != nil {
		return nil, "", fmt.Errorf("preset %s: %w", p.Name, err)
	}
	e, err := p.Spec()
	if err != nil {
		return nil, "", err
	}
	how, err := p.quick(e, m)
	if err != nil {
		return nil, "", fmt.Errorf("preset %s, quick variant for %d cores: %w", p.Name, cores, err)
	}
	how = "at " + m.String() + ": " + how
	e.Metadata.Description += " (quick: " + how + ")"
	// Re-resolve: the scaled values get their defaults and checks.
	b, err := experiment.Marshal(e)
	if err != nil {
		return nil, "", err
	}
	q, err := experiment.Parse(b, p.Name+" --quick")
	if err != nil {
		return nil, "", fmt.Errorf("preset %s, quick variant for %d cores: %w", p.Name, cores, err)
	}
	return q, how, nil
}

// milli is a CPU amount of m millicores, written in Kubernetes units.
func milli(m int) units.CPUQuantity { return units.Millicores(int64(m)) }

// config finds a config of the spec by name: a spec changed by hand may lack
// one that a preset scales or checks.
func config(e *experiment.Experiment, name string) (*experiment.Config, error) {
	i := slices.IndexFunc(e.Spec.Configs, func(c experiment.Config) bool { return c.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("the spec has no config %q", name)
	}
	return &e.Spec.Configs[i], nil
}

// dropConfigs removes configs the check does not read from a quick
// variant, so each repeat costs only the runs the verdict needs.
func dropConfigs(e *experiment.Experiment, names ...string) {
	e.Spec.Configs = slices.DeleteFunc(e.Spec.Configs, func(c experiment.Config) bool { return slices.Contains(names, c.Name) })
}
