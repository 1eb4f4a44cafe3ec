package limitmap

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/units"
)

// ErrNoReference, ErrNoLimited and ErrAxis say that the experiment cannot
// be mapped as asked (no unlimited config, no limited config, a load
// without that axis): the errors returned wrap them.
var (
	ErrNoReference = errors.New("no unlimited config to compare with")
	ErrNoLimited   = errors.New("no config with a CPU limit")
	ErrAxis        = errors.New("the load has no such axis")
)

// SelfReference as Options.Reference compares the limited config with
// itself without a limit (for specs without an unlimited config).
const SelfReference = "self"

// pair is the two configs a map compares.
type pair struct {
	limited, reference experiment.Config
}

func hasLimit(c experiment.Config) bool {
	k, err := c.CPU.Kube()
	return err == nil && k.LimitMilli > 0
}

// choose finds the limited config (by name, or the first with a limit) and
// the unlimited reference (by name, SelfReference, the spec's reference if
// unlimited, or the first config without a limit).
func choose(e *experiment.Experiment, limited, reference string) (pair, error) {
	var p pair
	found := false
	for _, c := range e.Spec.Configs {
		if limited == "" && hasLimit(c) || limited != "" && c.Name == limited {
			p.limited, found = c, true
			break
		}
	}
	switch {
	case !found && limited != "":
		return p, fmt.Errorf("%s has no config named %q (%w): its configs are %s", e.Metadata.Name, limited, ErrNoLimited, configNames(e))
	case !found:
		return p, fmt.Errorf("%s: %w: map varies the limit of a limited config; add one with cpu.limit", e.Metadata.Name, ErrNoLimited)
	case !hasLimit(p.limited):
		return p, fmt.Errorf("%s: config %q has no CPU limit: pick a limited config (%w)", e.Metadata.Name, limited, ErrNoLimited)
	}
	if reference == SelfReference {
		p.reference = unlimited(p.limited)
		return p, nil
	}
	found = false
	for _, c := range e.Spec.Configs {
		if reference != "" && c.Name == reference || reference == "" && c.Name == e.Spec.Reference && !hasLimit(c) {
			p.reference, found = c, true
		}
	}
	for _, c := range e.Spec.Configs {
		if !found && reference == "" && !hasLimit(c) {
			p.reference, found = c, true
		}
	}
	switch {
	case !found && reference != "":
		return p, fmt.Errorf("%s has no config named %q (%w): its configs are %s (or the reference self)", e.Metadata.Name, reference, ErrNoReference, configNames(e))
	case !found:
		return p, fmt.Errorf("%s: %w: add a config without cpu.limit, or take the reference self (the limited config without its limit)", e.Metadata.Name, ErrNoReference)
	case hasLimit(p.reference):
		return p, fmt.Errorf("%s: reference %q has a CPU limit: %w (take the reference self for the limited config without its limit)", e.Metadata.Name, reference, ErrNoReference)
	case p.reference.Name == p.limited.Name:
		return p, fmt.Errorf("%s: the reference and the limited config are both %q: %w", e.Metadata.Name, reference, ErrNoReference)
	}
	return p, nil
}

func configNames(e *experiment.Experiment) string {
	s := ""
	for i, c := range e.Spec.Configs {
		if i > 0 {
			s += ", "
		}
		s += c.Name
	}
	return s
}

// unlimited is a config without its limit (the request, burst and the rest
// stay).
func unlimited(c experiment.Config) experiment.Config {
	c.Name += "-unlimited"
	c.CPU.Limit, c.CPU.Burst = units.CPUQuantity{}, experiment.Duration{}
	return c
}

// withLimit is the limited config at another limit. A request that equalled
// the limit moves with it (the QoS class stays); one above the new limit is
// lowered to it, as Kubernetes requires.
func withLimit(c experiment.Config, milli int64) experiment.Config {
	req := c.CPU.Request.Milli
	lim := units.Millicores(milli)
	if !c.CPU.Request.IsZero() && (req == c.CPU.Limit.Milli || req > milli) {
		c.CPU.Request = lim
	}
	c.CPU.Limit = lim
	return c
}

// checkAxis says whether the experiment's load can vary along axis.
func checkAxis(e *experiment.Experiment, axis Axis) error {
	if len(e.Spec.Loads) != 1 {
		return fmt.Errorf("%s has %d loads (%w): map varies one; keep one load in the spec", e.Metadata.Name, len(e.Spec.Loads), ErrAxis)
	}
	mode := loadgen.Mode(e.Spec.Loads[0].Mode)
	switch axis {
	case AxisRate:
		if mode != loadgen.ModeRate && mode != loadgen.ModeOnOff && mode != loadgen.ModeProbe {
			return fmt.Errorf("%s: its load is a closed loop (mode %s), which has no rate (%w): map it against workers", e.Metadata.Name, mode, ErrAxis)
		}
	case AxisWorkers:
		if mode != loadgen.ModeImage && mode != loadgen.ModeRamp && mode != loadgen.ModeSequential {
			return fmt.Errorf("%s: its load is open loop (mode %s), which has no workers (%w): map it against a rate", e.Metadata.Name, mode, ErrAxis)
		}
	case AxisBurst:
	default:
		return fmt.Errorf("axis %q (%w): want %s, %s or %s", axis, ErrAxis, AxisRate, AxisWorkers, AxisBurst)
	}
	return nil
}

// withLoad is the spec's load at a point of the axis: the rate (per source
// for on/off loads), or the workers (a sequential load or a ramp becomes a
// ramp from and to that count, one step as long as the load).
func withLoad(l experiment.Load, axis Axis, v float64) experiment.Load {
	switch axis {
	case AxisRate:
		l.Rate = v
	case AxisWorkers:
		w := int(v)
		switch loadgen.Mode(l.Mode) {
		case loadgen.ModeImage:
			l.Workers = w
		default:
			l.Mode, l.Ramp = string(loadgen.ModeRamp), loadgen.Ramp{From: w, To: w}
			step := l.Duration.Duration
			if step == 0 {
				step = 10 * time.Second
			}
			l.Step = experiment.Duration{Duration: step}
		}
	}
	return l
}

// offeredRate is the rate an open-loop load offers (requests per second),
// or 0 for a closed loop, whose rate is what the servers answer.
func offeredRate(l experiment.Load) float64 {
	switch loadgen.Mode(l.Mode) {
	case loadgen.ModeRate, loadgen.ModeProbe:
		return l.Rate
	case loadgen.ModeOnOff:
		if l.Rate == 0 {
			return 0 // back to back while on: a closed loop per source
		}
		on, off := l.On.Seconds(), l.Off.Seconds()
		return float64(l.Sources) * l.Rate * on / (on + off)
	}
	return 0
}

// cellSpec is a one-config, one-load experiment for a cell or a reference,
// seeded for one repeat.
func cellSpec(e *experiment.Experiment, c experiment.Config, l experiment.Load, seed uint64) *experiment.Experiment {
	x := *e
	x.Spec.Configs = []experiment.Config{c}
	x.Spec.Loads = []experiment.Load{l}
	x.Spec.Reference = c.Name
	x.Spec.Repeats = 1
	x.Spec.Seed = seed
	return &x
}

// repeatSeed is the seed of repeat r (from 0): the reference and every
// cell of a load share it, so they see the same arrivals and differ only by
// the limit.
func repeatSeed(seed uint64, r int) uint64 {
	if r == 0 {
		return seed
	}
	// splitmix64 of seed+r: repeats far apart, and the same every time.
	z := seed + uint64(r)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
