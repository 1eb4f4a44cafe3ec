package sim

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/runner"
)

// knownMisses are figures the model is known not to reach, with the reason.
// They are reported, not asserted; every other figure must be within the
// tolerances.
var knownMisses = map[string]string{
	"tiles-closed/unlimited / load0/p99 ms": "the unlimited tail comes from Go's GC pauses and CFS time slices shared with the load generator; the fluid model has neither",
	"burst-none/api / load0/p99 ms":         "p99 of 100 requests to an idle server is its single slowest: host jitter the model does not have",
	"limits/unlimited / load0/p99 ms":       "the same: an unlimited instance's tail under Poisson arrivals is 30-35% longer than the model's M/D/2-like queue",
	"burst-1/api / load0/p99 ms":            "a weight-2 (BestEffort) server beside the burst worker: the fluid model gives it 0.2% of a shared core, the kernel's wake-up placement lets it run sooner",
	// Costs.Network was measured with the load generator of before 2026-11
	// (docs/simulator.md); today's answers sooner, so sub-millisecond
	// medians come out high.
	"f05-service/pods / load0/p50 ms":     "0.24 ms of simulated loopback against about 0.05 ms with today's load generator (Costs.Network is the old one's)",
	"f01-logjam/unlimited / load0/p50 ms": "a median small tile at 18 requests/s: the model's fixed delays (0.24 ms loopback, 0.2 ms idle wake-up, 0.3 ms wake-up CPU) were measured with the old load generator",
	"f01-logjam/limited / load0/p50 ms":   "the same as the unlimited median",
}

// TestValidationAgainstRealRuns simulates each recorded real run on a machine
// like the one it was recorded on and compares: throttled periods within 10
// points, p50 and p99 within 25%, throughput and burst goodput within 15%.
func TestValidationAgainstRealRuns(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/real/*/spec.yaml")
	if len(dirs) < 6 {
		t.Fatalf("found %d recorded runs, want 6", len(dirs))
	}
	for _, spec := range dirs {
		dir := filepath.Dir(spec)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			e, env, measured, err := record.ReadResults(dir)
			if err != nil {
				t.Fatal(err)
			}
			costs, err := MeasuredCosts(dir, e, env, measured, DefaultCosts())
			if err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			simulated, _, err := simRun(e, out, Options{Cores: env.Cores, Costs: costs, RepeatSeeds: RecordedSeeds(measured), LoadGenInRoot: env.LoadGen == nil})
			if err != nil {
				t.Fatal(err)
			}
			cs := Compare(e, measured, simulated, dir, out, DefaultTolerances)
			var table bytes.Buffer
			WriteComparison(&table, cs)
			t.Logf("%s\n%s", name, table.String())
			checked := 0
			for _, c := range cs {
				for _, m := range c.Metrics {
					key := name + "/" + c.Subject + "/" + m.Name
					if why, ok := knownMisses[key]; ok {
						t.Logf("known miss %s: measured %.2f, simulated %.2f (%s)", key, m.Measured, m.Simulated, why)
						continue
					}
					checked++
					if !m.OK {
						t.Errorf("%s: measured %.2f, simulated %.2f (error %+.3f)", key, m.Measured, m.Simulated, m.Error)
					}
				}
			}
			if checked < 3 {
				t.Errorf("only %d figures compared", checked)
			}
		})
	}
}

// TestDeterministic: the same spec and seed give byte-identical results.
func TestDeterministic(t *testing.T) {
	e, _, _, err := record.ReadResults("testdata/real/tiles-closed")
	if err != nil {
		t.Fatal(err)
	}
	var trees [2]map[string][]byte
	for i := range trees {
		dir := t.TempDir()
		if _, _, err := simRun(e, dir, Options{Cores: 4}); err != nil {
			t.Fatal(err)
		}
		trees[i] = map[string][]byte{}
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				b, _ := os.ReadFile(p)
				rel, _ := filepath.Rel(dir, p)
				trees[i][rel] = b
			}
			return nil
		})
	}
	if len(trees[0]) < 8 {
		t.Fatalf("only %d files written", len(trees[0]))
	}
	for name, b := range trees[0] {
		if !bytes.Equal(b, trees[1][name]) {
			t.Errorf("%s differs between two runs", name)
		}
	}
	// A different seed gives a different run.
	e.Spec.Seed++
	dir := t.TempDir()
	if _, _, err := simRun(e, dir, Options{Cores: 4}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "runs/limited/load0/r1/requests.csv"))
	if bytes.Equal(b, trees[0][filepath.Join("runs/limited/load0/r1/requests.csv")]) {
		t.Error("another seed gave the same requests")
	}
}

// TestConfigNeighbours: a config's own neighbour runs in its runs only, and
// a weight-2 hog beside a server on a shared core slows the server.
func TestConfigNeighbours(t *testing.T) {
	e, err := experiment.Parse([]byte(`apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata: {name: nb}
spec:
  workload: {request: burn, burn: cpu=5ms}
  load: {mode: rate, rate: 150, arrivals: poisson, duration: 4s}
  neighbours: [{name: probe, kind: probe, rate: 20}]
  configs:
    - name: alone
      cpu: {request: "1"}
    - name: besteffort-hog
      cpu: {request: "1"}
      neighbours: [{name: hog, kind: noise, threads: 2}]
`), "nb.yaml")
	if err != nil {
		t.Fatal(err)
	}
	runs, _, err := simRun(e, t.TempDir(), Options{Cores: 2})
	if err != nil {
		t.Fatal(err)
	}
	alone, noisy := runs[0], runs[1]
	if len(alone.Neighbours) != 0 || len(noisy.Neighbours) != 1 {
		t.Fatalf("neighbours: alone %v, with hog %v", alone.Neighbours, noisy.Neighbours)
	}
	if alone.Probe == nil || alone.Probe.Requests < 70 || alone.Probe.Requests > 90 || alone.Probe.Mode != "probe" {
		t.Errorf("probe at 20/s for 4 s: %+v", alone.Probe)
	}
	if noisy.Summary.Latency.P99 <= 1.2*alone.Summary.Latency.P99 {
		t.Errorf("p99 alone %.2f ms, beside a weight-2 hog %.2f ms: want the hog to hurt", alone.Summary.Latency.P99, noisy.Summary.Latency.P99)
	}
}

// simRun simulates every run of e into the results directory dir under the
// runner, as throttlelab sim does.
func simRun(e *experiment.Experiment, dir string, opt Options) ([]*record.Run, *Info, error) {
	b := NewBackend(opt)
	out, err := runner.Run(context.Background(), e, b, runner.Options{Dir: dir})
	return out.Runs, b.Info(), err
}

// TestAheadSameBytes: the runs simulated ahead, as many at once as there
// are CPUs, write the bytes that one run at a time writes, and leave no
// staging directory behind.
func TestAheadSameBytes(t *testing.T) {
	e, _, _, err := record.ReadResults("testdata/real/tiles-closed")
	if err != nil {
		t.Fatal(err)
	}
	e.Spec.Repeats = 3 // 6 runs, alternating configs of unequal length
	if n := len(e.Runs()); n < 3 {
		t.Fatalf("%d runs: the test needs at least 3 to simulate two ahead", n)
	}
	var trees [2]map[string][]byte
	for i, procs := range []int{1, 3} {
		dir := t.TempDir()
		prev := runtime.GOMAXPROCS(procs)
		_, _, err := simRun(e, dir, Options{Cores: 4})
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
		trees[i] = map[string][]byte{}
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			if strings.HasPrefix(fi.Name(), ".sim-ahead") {
				t.Errorf("GOMAXPROCS %d: %s left behind", procs, p)
			}
			if !fi.IsDir() {
				b, _ := os.ReadFile(p)
				rel, _ := filepath.Rel(dir, p)
				trees[i][rel] = b
			}
			return nil
		})
	}
	if len(trees[0]) < 8 || len(trees[0]) != len(trees[1]) {
		t.Fatalf("%d files one at a time, %d ahead", len(trees[0]), len(trees[1]))
	}
	for name, b := range trees[0] {
		if !bytes.Equal(b, trees[1][name]) {
			t.Errorf("%s differs between one run at a time and runs ahead", name)
		}
	}
}
