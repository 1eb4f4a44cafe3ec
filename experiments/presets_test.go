package experiments

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/runner"
	"github.com/throttlelab/throttlelab/sim"
	"github.com/throttlelab/throttlelab/units"
)

var update = flag.Bool("update", false, "rewrite the golden verdicts in testdata/verdicts")

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
			golden := filepath.Join("testdata", "verdicts", p.Name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./experiments -run ChecksOnSimulated -update writes it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("verdict.json differs from %s (rerun with -update if the change is meant):\n%s", golden, got)
			}
			t.Logf("%s", Line(v))
		})
	}
}

// TestNegativeVariants runs every preset's negative variant (its quick
// spec changed so that the finding cannot hold) in the simulator: its check
// must say not reproduced, not merely fail to reproduce.
func TestNegativeVariants(t *testing.T) {
	for _, p := range All() {
		t.Run(p.Name, func(t *testing.T) {
			if p.negative == nil {
				t.Fatal("no negative variant")
			}
			dir, how := simulateQuick(t, p, p.negative)
			v, err := p.Evaluate(dir, how)
			if err != nil {
				t.Fatal(err)
			}
			if v.Outcome != record.NotReproduced {
				t.Errorf("the negative variant, where the finding cannot hold, gave: %s", Line(v))
			}
			// F12's why is computed from the data: the neighbour's CPU
			// beside each weight and the server's stall.
			if p.Finding == "F12" && !strings.Contains(v.Why, "beside weight 10000") {
				t.Errorf("F12 why: %q", v.Why)
			}
		})
	}
}

// TestChecksCanFail runs presets changed so that the finding cannot hold:
// the checks must say so.
func TestChecksCanFail(t *testing.T) {
	cases := []struct{ preset string }{
		// Round robin over the pods never sends two in a row to the same one.
		{"f05-service"},
		// Without limits, nothing waits for the next period.
		{"f09-burn-flow"},
	}
	for _, c := range cases {
		p, _ := Lookup(c.preset)
		e, how, err := p.Quick(2)
		if err != nil {
			t.Fatal(err)
		}
		switch c.preset {
		case "f05-service":
			e.Spec.Balancer = "roundrobin"
		case "f09-burn-flow":
			for i := range e.Spec.Configs {
				e.Spec.Configs[i].CPU.Limit = "1"
			}
		}
		dir := t.TempDir()
		if _, err := runner.Run(context.Background(), e, sim.NewBackend(sim.Options{Cores: 2}), runner.Options{Dir: dir}); err != nil {
			t.Fatal(err)
		}
		v, err := p.Evaluate(dir, how)
		if err != nil {
			t.Fatal(err)
		}
		if v.Reproduced {
			t.Errorf("%s changed so it cannot hold, yet: %s", c.preset, Line(v))
		}
	}
}

// TestWhy: a failed check says why where the results can tell.
func TestWhy(t *testing.T) {
	p, _ := Lookup("f14-pinning")
	e, how, err := p.Quick(2)
	if err != nil {
		t.Fatal(err)
	}
	// With a quota on the pinned container too, below the one core it is
	// pinned to, it is throttled. (A quota of the whole core is not: one core
	// cannot use more than one core's time, in the kernel or the simulator.)
	for i := range e.Spec.Configs {
		if e.Spec.Configs[i].Name == "pinned" {
			e.Spec.Configs[i].CPU.Request, e.Spec.Configs[i].CPU.Limit = "500m", "500m"
		}
	}
	dir := t.TempDir()
	if _, err := runner.Run(context.Background(), e, sim.NewBackend(sim.Options{Cores: 2}), runner.Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	v, err := p.Evaluate(dir, how)
	if err != nil {
		t.Fatal(err)
	}
	if v.Reproduced || !strings.Contains(v.Why, "it has a quota") {
		t.Errorf("verdict %+v", v)
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
		if _, err := p.quick(e, 2); err == nil || !strings.Contains(err.Error(), "the spec has no config") {
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
	if clean.Outcome != record.Reproduced || clean.Disturbed != "" {
		t.Fatalf("undisturbed: %s", Line(clean))
	}
	first := runSummaries(t, dir)[0]
	setHostOther(t, first, 0.15) // under a tenth of 2 cores
	if v, err := p.Evaluate(dir, how); err != nil || v.Outcome != record.Reproduced || v.Disturbed != "" {
		t.Fatalf("0.15 cores of other work: %v %s", err, Line(v))
	}
	setHostOther(t, first, 0.9)
	v, err := p.Evaluate(dir, how)
	if err != nil {
		t.Fatal(err)
	}
	if v.Outcome != record.Inconclusive || v.Reproduced || !strings.Contains(v.Disturbed, "0.90 of its 2 cores during 1 of") || !strings.Contains(Line(v), "Disturbed: ") {
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
	if v.Outcome != record.Reproduced || v.Disturbed != "" {
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
