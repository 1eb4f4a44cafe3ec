package presets

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/settle"
	"github.com/throttlelab/throttlelab/verdict"
)

// Priors are the run-to-run spreads of the presets' per-repeat conditions
// measured on one machine at one scale: what a look at few repeats on that
// machine pools with its own spread (settle.PooledInterval), so that its t
// interval has many degrees of freedom rather than two.
type Priors struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Machine is the machine the runs measured on (MachineOf): a run on
	// another gets no prior.
	Machine string `json:"machine"`
	// Quick is true for the presets' --quick variants.
	Quick bool `json:"quick"`
	// Runs are the start times of the runs pooled (env.json's started):
	// a run among them is not pooled with itself.
	Runs []time.Time `json:"runs"`
	// Presets are the priors by preset, then by condition name.
	Presets map[string]map[string]settle.Prior `json:"presets"`
	// Designs are the fingerprints (DesignOf) of the quick design each
	// preset's runs ran, by preset: a run of another design (its quick
	// variant changed since) gets no prior, and is not pooled with them
	// (Merge keeps the newer design's alone).
	Designs map[string]string `json:"designs"`
}

// PriorsKind is the kind of a priors document.
const PriorsKind = "Priors"

//go:embed priors.json
var priorsJSON []byte

// known are the priors this build carries (priors.json).
var known = func() []Priors {
	var out []Priors
	if err := json.Unmarshal(priorsJSON, &out); err != nil {
		panic(fmt.Sprintf("presets: priors.json: %v", err)) // a build fault: TestPriors reads it
	}
	return out
}()

// MachineOf names a machine as priors match it: the CPU model, its cores
// and how the cpu controller is mounted. The kernel is left out: a kernel
// update on the reference machine keeps its spread close enough, and the
// guard (settle.GuardLevel) catches one that does not.
func MachineOf(env record.Env) string {
	return fmt.Sprintf("%s, %d cores, cgroup %s with the cpu controller on %s", env.CPUModel, env.Cores, env.CgroupMode, env.CPUController)
}

// DesignOf is the fingerprint of the design a run ran: the first 12 hex
// digits of the SHA-256 of its resolved spec (as the run stored it) with
// the repeats left out, since a run continued until settled keeps its
// design with more repeats. Runs of one preset with another fingerprint
// ran another quick design, whose spread is not this one's.
func DesignOf(e *experiment.Experiment) string {
	c := *e
	c.Spec.Repeats = 0
	b, err := json.Marshal(c)
	if err != nil {
		return ""
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:6])
}

// attachPriors gives each condition with per-repeat values the prior of
// sets (this build's, known, for nil) for its preset on this machine at
// this scale and of this quick design (DesignOf), if any: only measured
// runs (a simulation is no run of this machine), and never a run the
// prior was pooled from.
func (p *Preset) attachPriors(r *Results, conds []verdict.Condition, quick bool, sets []Priors) {
	if r.Env.Backend != "local" {
		return
	}
	if sets == nil {
		sets = known
	}
	m, design := MachineOf(r.Env), DesignOf(r.Spec)
	for _, set := range sets {
		if set.Machine != m || set.Quick != quick || set.Has(r.Env.Started) || set.Designs[p.Name] != design {
			continue
		}
		for i := range conds {
			if pr, ok := set.Presets[p.Name][conds[i].Name]; ok && conds[i].PerRepeat != nil {
				conds[i].Prior = &pr
			}
		}
	}
}

// PriorsFrom pools the per-repeat values of each condition of the results
// in dirs (measured runs of presets on one machine, at one scale) into
// priors: one run's values a sample, pooled with settle.PriorOf. It is an
// error for the dirs to mix machines or scales, for a dir to hold no
// preset's results, or for other work to have disturbed its runs (their
// spread would be that work's too; a self-check's figures are
// throttlelab's own seeded choices, which other work does not disturb).
func PriorsFrom(dirs []string) (Priors, error) {
	out := Priors{APIVersion: "throttlelab/v1alpha1", Kind: PriorsKind, Presets: map[string]map[string]settle.Prior{}, Designs: map[string]string{}}
	per := map[string]map[string][][]float64{}
	dates, scales := map[string]map[string]string{}, map[string]map[string]string{}
	for i, dir := range dirs {
		info, err := ReadInfo(dir)
		if err != nil {
			return Priors{}, err
		}
		var p *Preset
		if info != nil {
			p, _ = Lookup(info.Preset)
		}
		if p == nil || p.verdict == nil {
			return Priors{}, fmt.Errorf("%s: ran no preset with a check: give results of presets only", dir)
		}
		r, err := readResults(dir, nil)
		if err != nil {
			return Priors{}, err
		}
		if r.Env.Backend != "local" {
			return Priors{}, fmt.Errorf("%s: backend %q: priors come from measured runs (local) only", dir, r.Env.Backend)
		}
		if d := r.disturbed(); d != "" && !p.SelfCheck {
			return Priors{}, fmt.Errorf("%s: %s: leave it out of the priors", dir, d)
		}
		m, quick := MachineOf(r.Env), info.Scaled != ""
		if i == 0 {
			out.Machine, out.Quick = m, quick
		} else if m != out.Machine || quick != out.Quick {
			return Priors{}, fmt.Errorf("%s: ran on %q (quick %v), not %q (quick %v) as the first: give one machine's runs at one scale", dir, m, quick, out.Machine, out.Quick)
		}
		conds, _, err := p.verdict(r)
		if err != nil {
			return Priors{}, fmt.Errorf("%s: %w", dir, err)
		}
		design := DesignOf(r.Spec)
		if d, ok := out.Designs[p.Name]; ok && d != design {
			return Priors{}, fmt.Errorf("%s: %s ran quick design %s, another run given ran %s: give runs of one design per preset", dir, p.Name, design, d)
		}
		out.Designs[p.Name] = design
		out.Runs = append(out.Runs, r.Env.Started)
		for _, c := range conds {
			if len(c.PerRepeat) < 2 {
				continue
			}
			if per[p.Name] == nil {
				per[p.Name], dates[p.Name], scales[p.Name] = map[string][][]float64{}, map[string]string{}, map[string]string{}
			}
			v := c.PerRepeat
			if c.LogScale {
				if v = settle.Logs(v); v == nil {
					continue // a ratio with a figure not above zero
				}
				scales[p.Name][c.Name] = settle.LogScale
			}
			per[p.Name][c.Name] = append(per[p.Name][c.Name], v)
			dates[p.Name][c.Name] = r.Env.Started.UTC().Format(time.DateOnly)
		}
	}
	for name, conds := range per {
		out.Presets[name] = map[string]settle.Prior{}
		for c, runs := range conds {
			src := fmt.Sprintf("%d measured run(s) of %s (design %s) on %s", len(runs), name, out.Designs[name], out.Machine)
			if pr, ok := settle.PriorOf(runs, dates[name][c], src); ok {
				pr.Scale = scales[name][c]
				out.Presets[name][c] = pr
			}
		}
	}
	return out, nil
}

// Merge pools the priors of q into p's, both of one machine and scale
// (ok false otherwise): per condition the sums of squares and the degrees
// of freedom add, as PriorOf pools runs, so earlier runs' priors and new
// ones make one; the runs are listed once. A run in both would count
// twice: leave such runs out of q (Has).
func (p Priors) Merge(q Priors) (Priors, bool) {
	if p.Machine != q.Machine || p.Quick != q.Quick {
		return Priors{}, false
	}
	out := Priors{APIVersion: p.APIVersion, Kind: p.Kind, Machine: p.Machine, Quick: p.Quick,
		Runs: slices.Concat(p.Runs, q.Runs), Presets: map[string]map[string]settle.Prior{}, Designs: map[string]string{}}
	for _, set := range []Priors{p, q} {
		for name, conds := range set.Presets {
			if d := set.Designs[name]; out.Designs[name] != d {
				// q's design is the newer: p's runs of another
				// design are not pooled with it.
				out.Presets[name], out.Designs[name] = map[string]settle.Prior{}, d
			}
			if out.Presets[name] == nil {
				out.Presets[name] = map[string]settle.Prior{}
			}
			for c, b := range conds {
				a, ok := out.Presets[name][c]
				if !ok || a.Scale != b.Scale {
					out.Presets[name][c] = b
					continue
				}
				df := a.DF + b.DF
				ss := float64(a.DF)*a.SD*a.SD + float64(b.DF)*b.SD*b.SD
				out.Presets[name][c] = settle.Prior{SD: math.Sqrt(ss / float64(df)), DF: df, Repeats: a.Repeats + b.Repeats,
					Date: max(a.Date, b.Date), Source: a.Source + "; " + b.Source, Scale: a.Scale}
			}
		}
	}
	return out, true
}

// Has says whether the run that started at started is among p's.
func (p Priors) Has(started time.Time) bool { return slices.ContainsFunc(p.Runs, started.Equal) }
