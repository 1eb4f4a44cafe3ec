package presets

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/settle"
)

// TestPriors holds priors.json to the presets (every prior names a preset
// and one of its per-repeat conditions, with a spread and degrees of
// freedom), pools a committed quick run into a prior, and attaches a
// machine's priors to a measured run of that machine only (refusing a
// disturbed run as a source): not to a
// simulation, another machine, another scale or a run the prior came from.
func TestPriors(t *testing.T) {
	if len(known) == 0 {
		t.Fatal("priors.json holds no priors")
	}
	for _, set := range known {
		if set.Kind != PriorsKind || set.Machine == "" || len(set.Runs) == 0 {
			t.Errorf("priors for %q: kind %q, %d runs", set.Machine, set.Kind, len(set.Runs))
		}
		for name, conds := range set.Presets {
			if _, ok := Lookup(name); !ok {
				t.Errorf("priors for %q: no preset %q", set.Machine, name)
			}
			for c, pr := range conds {
				if !(pr.SD > 0) || pr.DF < 1 || pr.Repeats <= pr.DF || pr.Date == "" || pr.Source == "" {
					t.Errorf("prior of %s %q: %+v", name, c, pr)
				}
			}
		}
	}
	// The committed run was disturbed in one of its runs: refused. A copy
	// with that run's other work set quiet is pooled.
	if _, err := PriorsFrom([]string{"testdata/f14-quick"}); err == nil {
		t.Error("a disturbed run pooled into a prior")
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/f14-quick")); err != nil {
		t.Fatal(err)
	}
	sum := filepath.Join(dir, "runs/pinned/load0/r3/summary.json")
	b, err := os.ReadFile(sum)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sum, bytes.Replace(b, []byte(`"host_other_cores": 0.9098510474517083`), []byte(`"host_other_cores": 0.02`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := PriorsFrom([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	pr, ok := set.Presets["f14-pinning"]["p99 pinned / shared"]
	if !ok || pr.DF != 2 || pr.Repeats != 3 || !set.Quick || set.Machine != "AMD EPYC, 2 cores, cgroup hybrid with the cpu controller on v1" {
		t.Fatalf("prior from %s: %+v in %+v", dir, pr, set)
	}
	if _, err := PriorsFrom([]string{dir, "testdata/f14-quick-sim"}); err == nil {
		t.Error("a simulated run pooled into a prior")
	}
	r, err := readResults(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := Lookup("f14-pinning")
	other := set
	other.Runs = []time.Time{r.Env.Started.Add(time.Hour)}
	for _, c := range []struct {
		name    string
		set     Priors
		backend string
		quick   bool
		want    bool
	}{
		{"this machine, another run", other, "local", true, true},
		{"the run the prior came from", set, "local", true, false},
		{"full scale", other, "local", false, false},
		{"simulated", other, "sim", true, false},
	} {
		r.Env.Backend = c.backend
		conds, _, err := p.verdict(r)
		if err != nil {
			t.Fatal(err)
		}
		p.attachPriors(r, conds, c.quick, []Priors{c.set})
		got := false
		for _, cd := range conds {
			if cd.Prior != nil {
				got = cd.Name == "p99 pinned / shared" && *cd.Prior == pr
			}
		}
		if got != c.want {
			t.Errorf("%s: prior attached %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPriorsMerge pools two sets of priors of one machine as PriorOf pools
// their runs together, and refuses sets of two machines.
func TestPriorsMerge(t *testing.T) {
	runA, runB := [][]float64{{1, 3}, {2, 2, 5}}, [][]float64{{4, 4.5, 6, 5}}
	a, _ := settle.PriorOf(runA, "2026-11-28", "a")
	b, _ := settle.PriorOf(runB, "2026-11-29", "b")
	all, _ := settle.PriorOf(append(runA, runB...), "", "")
	t0 := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	pa := Priors{Machine: "m", Quick: true, Runs: []time.Time{t0}, Presets: map[string]map[string]settle.Prior{"f14-pinning": {"c": a}}}
	pb := Priors{Machine: "m", Quick: true, Runs: []time.Time{t0.Add(time.Hour)}, Presets: map[string]map[string]settle.Prior{"f14-pinning": {"c": b}, "f12-weights": {"d": b}}}
	m, ok := pa.Merge(pb)
	got := m.Presets["f14-pinning"]["c"]
	if !ok || got.DF != all.DF || got.Repeats != all.Repeats || math.Abs(got.SD-all.SD) > 1e-12 || got.Date != "2026-11-29" || m.Presets["f12-weights"]["d"] != b {
		t.Errorf("merged %+v (ok %v), want %+v as the runs pooled together", m, ok, all)
	}
	if !m.Has(t0) || !m.Has(t0.Add(time.Hour)) || m.Has(t0.Add(time.Minute)) {
		t.Errorf("merged runs %v", m.Runs)
	}
	pb.Machine = "other"
	if _, ok := pa.Merge(pb); ok {
		t.Error("priors of two machines merged")
	}
}

// TestPriorsDesign: a prior pools runs of one quick design only. DesignOf
// ignores the repeats (a run continued until settled keeps its design)
// and changes with what runs in a repeat; a run of another design gets no
// prior; Merge keeps the newer design's priors alone.
func TestPriorsDesign(t *testing.T) {
	p, _ := Lookup("f14-pinning")
	e, _, err := p.Quick(2)
	if err != nil {
		t.Fatal(err)
	}
	d := DesignOf(e)
	more := *e
	more.Spec.Repeats = e.Spec.Repeats + 5
	if DesignOf(&more) != d || len(d) != 12 {
		t.Errorf("DesignOf %q changed with the repeats to %q", d, DesignOf(&more))
	}
	other := *e
	other.Spec.Warmup.Duration += time.Second
	if DesignOf(&other) == d {
		t.Error("DesignOf did not change with the warmup")
	}
	dir := "testdata/f14-quick"
	r, err := readResults(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	pr := settle.Prior{SD: 0.1, DF: 7, Repeats: 8, Date: "2026-11-29", Source: "s", Scale: settle.LogScale}
	set := Priors{Machine: MachineOf(r.Env), Quick: true, Runs: []time.Time{r.Env.Started.Add(time.Hour)},
		Presets: map[string]map[string]settle.Prior{p.Name: {"p99 pinned / shared": pr}}, Designs: map[string]string{p.Name: DesignOf(r.Spec)}}
	for _, c := range []struct {
		name   string
		design string
		want   bool
	}{{"the run's design", DesignOf(r.Spec), true}, {"another design", "000000000000", false}} {
		set.Designs[p.Name] = c.design
		conds, _, err := p.verdict(r)
		if err != nil {
			t.Fatal(err)
		}
		p.attachPriors(r, conds, true, []Priors{set})
		got := false
		for _, cd := range conds {
			got = got || cd.Prior != nil
			if cd.Name == "p99 pinned / shared" && !cd.LogScale {
				t.Error("the p99 ratio is not on the log scale")
			}
		}
		if got != c.want {
			t.Errorf("%s: prior attached %v, want %v", c.name, got, c.want)
		}
	}
	old := set
	old.Designs = map[string]string{p.Name: "111111111111"}
	newer := set
	newer.Runs = []time.Time{r.Env.Started.Add(2 * time.Hour)}
	newer.Designs = map[string]string{p.Name: "222222222222"}
	np := pr
	np.SD, np.DF = 0.2, 2
	newer.Presets = map[string]map[string]settle.Prior{p.Name: {"p99 pinned / shared": np}}
	m, ok := old.Merge(newer)
	if got := m.Presets[p.Name]["p99 pinned / shared"]; !ok || got != np || m.Designs[p.Name] != "222222222222" {
		t.Errorf("merged across designs: %+v (design %q), want the newer design's %+v alone", got, m.Designs[p.Name], np)
	}
}
