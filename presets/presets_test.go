package presets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/internal/golden"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/runner"
	"github.com/throttlelab/throttlelab/sim"
	"github.com/throttlelab/throttlelab/units"
	"github.com/throttlelab/throttlelab/verdict"
)

func TestPresetsParse(t *testing.T) {
	findings := map[string]bool{}
	files, _ := filepath.Glob("*.yaml")
	if len(files) != len(All()) {
		t.Errorf("%d spec files, %d presets", len(files), len(All()))
	}
	for _, p := range All() {
		e, err := p.Spec()
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if e.Metadata.Name != p.Name || p.Claim == "" || p.Check == "" || p.Published == "" || p.Cores < 1 {
			t.Errorf("%s: incomplete preset (spec name %q)", p.Name, e.Metadata.Name)
		}
		findings[p.Finding] = true
		// A preset is what a pod would get: nothing Kubernetes would change.
		if w := e.Warnings(); len(w) > 0 {
			t.Errorf("%s: %v", p.Name, w)
		}
		for _, cores := range []int{1, 2, 4, 16, 64} {
			q, how, err := p.Quick(cores)
			if cores < p.Faithful.MinCores {
				if !errors.Is(err, ErrNotFaithful) || !strings.Contains(err.Error(), fmt.Sprintf("needs %d CPUs", p.Faithful.MinCores)) {
					t.Errorf("%s quick for %d cores, under its floor of %d: %v", p.Name, cores, p.Faithful.MinCores, err)
				}
				continue
			}
			if err != nil || how == "" || !strings.Contains(q.Metadata.Description, "quick") {
				t.Errorf("%s quick for %d cores: %v (%q)", p.Name, cores, err, how)
				continue
			}
			if w := q.Warnings(); len(w) > 0 {
				t.Errorf("%s quick for %d cores: %v", p.Name, cores, w)
			}
		}
		for _, cores := range []int{0, -1, units.MaxCPUs + 1} {
			if _, _, err := p.Quick(cores); err == nil {
				t.Errorf("%s quick for %d cores: accepted", p.Name, cores)
			}
		}
	}
	for i := 1; i <= 14; i++ {
		if id := "F" + strconv.Itoa(i); !findings[id] {
			t.Errorf("no preset for %s", id)
		}
	}
}

// TestChecksOnSimulatedRuns simulates every quick variant for 2 cores and
// computes its check: each check must find its data and give its numbers.
func TestChecksOnSimulatedRuns(t *testing.T) {
	for _, p := range All() {
		t.Run(p.Name, func(t *testing.T) {
			dir, how := simulateQuick(t, p, nil)
			v, err := p.Evaluate(dir, how)
			if err != nil {
				t.Fatal(err)
			}
			if v.Numbers == "" || v.Finding != p.Finding || v.Backend != "sim" || v.Scaled != how {
				t.Errorf("verdict %+v", v)
			}
			// The simulator is deterministic: the verdict is pinned.
			got, err := os.ReadFile(filepath.Join(dir, "verdict.json"))
			if err != nil {
				t.Fatal(err)
			}
			golden.Compare(t, filepath.Join("testdata", "verdicts", p.Name+".json"), got)
			t.Logf("%s", Line(v))
		})
	}
}

// simPositive makes the simulator yield a finding its quick spec does not
// yield on 2 simulated cores, so that the negative variant has an outcome to
// flip. Each change keeps the finding's setup and says why it is needed.
var simPositive = map[string]func(*experiment.Experiment) error{
	// At three quarters of their workers' cores the noise pods' limits leave
	// only 0.07 cores more idle in the simulator (its per-CPU runtime slices
	// let a period hold more than the quota), under the 5% of the machine
	// the check asks; at half they leave about 0.2.
	"f06-noisy-neighbour": func(e *experiment.Experiment) error {
		c, err := config(e, "noise-limited")
		if err != nil {
			return err
		}
		for i := range c.Neighbours {
			c.Neighbours[i].CPU.Limit = milli(500)
		}
		return nil
	},
	// One BestEffort thread on 2 cores raises the simulated p99 by about the
	// check's threshold, an interval straddling it; two raise it clear of it.
	"f10-besteffort": func(e *experiment.Experiment) error {
		c, err := config(e, "besteffort")
		if err != nil {
			return err
		}
		for i := range c.Neighbours {
			c.Neighbours[i].Threads *= 2
		}
		e.Spec.Loads[0].Duration = dur(20 * time.Second)
		return nil
	},
	// The simulated shared pool spends its 100 ms quota on two cores in 50
	// ms and waits, so the pinned core is faster; with a 10 ms period the
	// pool's waits are short and the pinned core is no better, as the study
	// measured on the kernel.
	"f14-pinning": func(e *experiment.Experiment) error {
		c, err := config(e, "shared")
		if err != nil {
			return err
		}
		c.CPU.Period = experiment.Duration{Duration: 10 * time.Millisecond}
		return nil
	},
}

// reversed is the condition with its check turned around: at most where it
// asked at least, at least where it asked at most, and for a range the side
// of it the figure is on (the top when inside).
func reversed(c verdict.Condition) verdict.Condition {
	switch c.Op {
	case ">=":
		c.Op = "<="
	case "<=":
		c.Op = ">="
	case "between":
		if c.Value < c.Threshold {
			c.Op = "<="
		} else {
			c.Op, c.Threshold = ">=", c.High
		}
		c.High = 0
	}
	c.Outcome, c.RepeatsNeeded = "", 0
	return c
}

// TestNegativeVariants simulates every preset's quick variant (changed by
// simPositive where the simulator needs it), which must reproduce its
// finding, and its negative variant (that spec changed so that the finding
// cannot hold), which must not: the negative flips an outcome the positive
// yields here. Reversing the check flips both again, so the outcomes come
// from the check and not from a run that measured nothing.
func TestNegativeVariants(t *testing.T) {
	for _, p := range All() {
		t.Run(p.Name, func(t *testing.T) {
			if p.negative == nil {
				t.Fatal("no negative variant")
			}
			base := simPositive[p.Name]
			if base == nil {
				base = func(*experiment.Experiment) error { return nil }
			}
			dir, how := simulateQuick(t, p, base)
			pos, err := p.Evaluate(dir, how)
			if err != nil {
				t.Fatal(err)
			}
			if pos.Outcome != verdict.Reproduced {
				t.Fatalf("the positive variant does not reproduce the finding here, so the negative would prove nothing: %s", Line(pos))
			}
			dir, how = simulateQuick(t, p, func(e *experiment.Experiment) error {
				if err := base(e); err != nil {
					return err
				}
				return p.negative(e)
			})
			neg, err := p.Evaluate(dir, how)
			if err != nil {
				t.Fatal(err)
			}
			if neg.Outcome != verdict.NotReproduced {
				t.Errorf("the negative variant, where the finding cannot hold, gave: %s", Line(neg))
			}
			// Reversed, the check fails the positive variant...
			var rev []verdict.Condition
			for _, c := range pos.Conditions {
				rev = append(rev, reversed(c))
			}
			if out, _, err := verdict.Combine(rev, pos.Repeats); err != nil || out != verdict.NotReproduced {
				t.Errorf("the reversed check gave the positive variant %s (%v): %v", out, err, rev)
			}
			// ...and passes the conditions that sank the negative one.
			sank := 0
			for _, c := range neg.Conditions {
				if c.Outcome != verdict.NotReproduced {
					continue
				}
				sank++
				r := reversed(c)
				if err := r.Judge(neg.Repeats); err != nil || r.Outcome != verdict.Reproduced {
					t.Errorf("reversed, %s gave the negative variant %s (%v)", r, r.Outcome, err)
				}
			}
			if sank == 0 && neg.Outcome == verdict.NotReproduced {
				t.Errorf("the negative variant failed with no failing condition: %+v", neg.Conditions)
			}
			// The why is computed from the data: F12's from the neighbour's
			// CPU beside each weight and the server's stall, F14's from the
			// pinned container's throttling.
			if p.Finding == "F12" && !strings.Contains(neg.Why, "beside weight 10000") {
				t.Errorf("F12 why: %q", neg.Why)
			}
			if p.Finding == "F14" && !strings.Contains(neg.Why, "it has a quota") {
				t.Errorf("F14 why: %q", neg.Why)
			}
		})
	}
}

// TestMissingConfigIsAnError: a spec changed by hand that lacks a config a
// preset scales says so as an error (it used to panic).
func TestMissingConfigIsAnError(t *testing.T) {
	for _, name := range []string{"f01-logjam", "f03-pool-size", "f14-pinning"} {
		p, _ := Lookup(name)
		e, err := p.Spec()
		if err != nil {
			t.Fatal(err)
		}
		for i := range e.Spec.Configs {
			e.Spec.Configs[i].Name += "-renamed"
		}
		if _, err := p.quick(e, Machine{Cores: 2, From: p.Cores}); err == nil || !strings.Contains(err.Error(), "the spec has no config") {
			t.Errorf("%s: quick of a spec without its configs: %v", name, err)
		}
	}
}

// TestDisturbedRunsMakeVerdictsInconclusive: a run beside other work on the
// host (host_other_cores over a tenth of the machine) cannot reproduce or
// refute a finding; below the line the verdict stands.
func TestDisturbedRunsMakeVerdictsInconclusive(t *testing.T) {
	p, ok := Lookup("f09-burn-flow")
	if !ok {
		t.Fatal("no f09-burn-flow")
	}
	dir, how := simulateQuick(t, p, nil)
	clean, err := p.Evaluate(dir, how)
	if err != nil {
		t.Fatal(err)
	}
	if clean.Outcome != verdict.Reproduced || clean.Disturbed != "" {
		t.Fatalf("undisturbed: %s", Line(clean))
	}
	first := runSummaries(t, dir)[0]
	setHostOther(t, first, 0.15) // under a tenth of 2 cores
	if v, err := p.Evaluate(dir, how); err != nil || v.Outcome != verdict.Reproduced || v.Disturbed != "" {
		t.Fatalf("0.15 cores of other work: %v %s", err, Line(v))
	}
	setHostOther(t, first, 0.9)
	v, err := p.Evaluate(dir, how)
	if err != nil {
		t.Fatal(err)
	}
	if v.Outcome != verdict.Inconclusive || v.Reproduced || !strings.Contains(v.Disturbed, "0.90 of its 2 cores during 1 of") || !strings.Contains(Line(v), "Disturbed: ") {
		t.Errorf("0.9 cores of other work: %s", Line(v))
	}
}

// TestSelfChecksIgnoreOtherWork: F5's same-pod rate comes from the seeded
// balancer, so a busy host leaves its verdict as it is.
func TestSelfChecksIgnoreOtherWork(t *testing.T) {
	p, ok := Lookup("f05-service")
	if !ok || !p.SelfCheck {
		t.Fatal("f05-service is not a self-check")
	}
	dir, how := simulateQuick(t, p, nil)
	for _, f := range runSummaries(t, dir) {
		setHostOther(t, f, 1.5)
	}
	v, err := p.Evaluate(dir, how)
	if err != nil {
		t.Fatal(err)
	}
	if v.Outcome != verdict.Reproduced || v.Disturbed != "" {
		t.Errorf("a self-check beside other work: %s", Line(v))
	}
}

// simulateQuick simulates p's quick variant for 2 cores, changed by change
// when it is not nil, and returns the results directory and how it scaled.
func simulateQuick(t *testing.T, p *Preset, change func(*experiment.Experiment) error) (dir, how string) {
	t.Helper()
	e, how, err := p.Quick(2)
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		if err := change(e); err != nil {
			t.Fatal(err)
		}
	}
	dir = t.TempDir()
	if _, err := runner.Run(context.Background(), e, sim.NewBackend(sim.Options{Cores: 2}), runner.Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	return dir, how
}

// setHostOther writes host_other_cores into a run's summary.json.
func setHostOther(t *testing.T, path string, cores float64) {
	t.Helper()
	var r map[string]any
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	r["host_other_cores"] = cores
	if b, err = json.Marshal(r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// runSummaries lists the run summaries of a results directory.
func runSummaries(t *testing.T, dir string) []string {
	t.Helper()
	runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*", "*", "r*", "summary.json"))
	if len(runs) == 0 {
		t.Fatal("no run summaries")
	}
	return runs
}
