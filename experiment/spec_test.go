package experiment

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/units"
)

func TestExampleLimits(t *testing.T) {
	e, err := LoadFile("../examples/limits.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := e.Spec
	if e.Metadata.Name != "limits" || len(s.Configs) != 2 || s.Configs[1].Instances != 4 || s.Repeats != 2 || s.Reference != "unlimited" {
		t.Errorf("spec %+v", s)
	}
	// Defaults, applied in one place.
	if s.Balancer.String() != "random" || s.WeightMapping != "linear" || s.Seed != 1 || s.Configs[0].Server.GOMAXPROCS != units.GOMAXPROCSHost ||
		s.Configs[0].CPU.Period.Duration != 100*time.Millisecond || s.Loads[0].Timeout.Duration != 30*time.Second || s.Loads[0].Name != "load0" {
		t.Errorf("defaults not applied: %+v", s)
	}
	set, qos, err := e.Settings(s.Configs[1])
	if err != nil || qos != cgroup.Guaranteed || set.QuotaUsec != 25000 || set.Shares != 256 {
		t.Errorf("limited config: %+v %s %v", set, qos, err)
	}
	set, qos, _ = e.Settings(s.Configs[0])
	if qos != cgroup.BestEffort || set.QuotaUsec != -1 {
		t.Errorf("unlimited config: %+v %s", set, qos)
	}
	lc := e.LoadConfig(s.Loads[0])
	if lc.Rate != 100 || lc.Arrivals != "poisson" || lc.Duration != 5*time.Second || lc.Workload.Burn != (loadgen.Burn{CPU: 5 * time.Millisecond}) {
		t.Errorf("load config %+v", lc)
	}
}

func TestRunsOrder(t *testing.T) {
	base := `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata: {name: order}
spec:
  loads: [{name: slow, mode: sequential, requests: 5}, {name: fast, mode: sequential, requests: 9}]
  configs: [{name: a}, {name: b}]
  repeats: 2
`
	ids := func(e *Experiment) string {
		var out []string
		for _, r := range e.Runs() {
			out = append(out, r.ID())
		}
		return strings.Join(out, " ")
	}
	e, err := Parse([]byte(base), "order.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(e); got != "a/slow/r1 b/slow/r1 a/fast/r1 b/fast/r1 a/slow/r2 b/slow/r2 a/fast/r2 b/fast/r2" {
		t.Errorf("interleaved: %s", got)
	}
	e, err = Parse([]byte(base+"  order: grouped\n"), "order.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(e); got != "a/slow/r1 a/slow/r2 a/fast/r1 a/fast/r2 b/slow/r1 b/slow/r2 b/fast/r1 b/fast/r2" {
		t.Errorf("grouped: %s", got)
	}
}

// TestBadSpecs: every mistake gets an error that names the file, the line and the
// field.
func TestBadSpecs(t *testing.T) {
	good := `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata:
  name: x
spec:
  load:
    mode: rate
    rate: 10
    duration: 2s
  configs:
    - name: a
      cpu:
        limit: 500m
`
	tests := []struct {
		name, from, to, want string
	}{
		{"unknown field", "    rate: 10\n", "    rate: 10\n    rat: 11\n", "x.yaml:9: spec.load.rat: unknown field: spec.load takes name, mode, workers"},
		{"bad duration", "duration: 2s", "duration: soon", `x.yaml:9: spec.load.duration: "soon" is not a duration`},
		{"bad limit", "limit: 500m", "limit: lots", "x.yaml:13: spec.configs[0].cpu.limit: cpu quantity"},
		{"request above limit", "        limit: 500m\n", "        limit: 500m\n        request: 2\n", "x.yaml:14: spec.configs[0].cpu.request: cpu request 2000m is above the limit"},
		{"burst above quota", "        limit: 500m\n", "        limit: 500m\n        burst: 100ms\n", "x.yaml:14: spec.configs[0].cpu.burst"},
		{"burst without limit", "        limit: 500m\n", "        burst: 10ms\n", "spec.configs[0].cpu.burst: cpu burst needs a limit"},
		{"bad mode", "mode: rate", "mode: flood", `x.yaml:7: spec.load.mode: mode "flood"`},
		{"bad rate", "rate: 10", "rate: -3", "x.yaml:8: spec.load.rate: rate -3: must be positive"},
		{"no stop", "    duration: 2s\n", "", "needs a duration or a request count"},
		{"wrong version", "throttlelab/v1alpha1", "throttlelab/v9", `x.yaml:1: apiVersion: "throttlelab/v9" is not a version`},
		{"wrong kind", "kind: Experiment", "kind: Pod", `x.yaml:2: kind: "Pod": want Experiment`},
		{"bad name", "  name: x\n", "  name: ../x\n", "metadata.name"},
		{"duplicate config", "    - name: a\n", "    - name: a\n    - name: a\n", `spec.configs[1].name: "a" is used twice`},
		{"bad cpuset", "        limit: 500m\n", "        cpuset: 3-1\n", "spec.configs[0].cpu.cpuset"},
		{"bad balancer", "spec:\n", "spec:\n  balancer: nearest\n", "x.yaml:6: spec.balancer"},
		{"bad order", "spec:\n", "spec:\n  order: shuffled\n", "spec.order"},
		{"bad reference", "spec:\n", "spec:\n  reference: nope\n", `spec.reference: "nope" is not the name of a config`},
		{"bad neighbour", "spec:\n", "spec:\n  neighbours: [{name: n, kind: fan}]\n", `spec.neighbours[0].kind: "fan"`},
		{"too many instances", "    - name: a\n", "    - name: a\n      instances: 1000\n", "spec.configs[0].instances: 1000"},
		{"bad gomaxprocs", "    - name: a\n", "    - name: a\n      server: {gomaxprocs: lots}\n", "spec.configs[0].server.gomaxprocs"},
		{"no configs", "  configs:\n    - name: a\n      cpu:\n        limit: 500m\n", "", "spec.configs: missing"},
		{"load and loads", "spec:\n", "spec:\n  loads: [{mode: sequential, requests: 1}]\n", "not both"},
		{"bad weight mapping", "spec:\n", "spec:\n  weightMapping: cubic\n", "spec.weightMapping"},
		{"not yaml", "kind: Experiment", "kind: [Experiment", "x.yaml"},
	}
	if _, err := Parse([]byte(good), "x.yaml"); err != nil {
		t.Fatalf("the good spec: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(good, tt.from) {
				t.Fatalf("test broken: %q not in the spec", tt.from)
			}
			_, err := Parse([]byte(strings.Replace(good, tt.from, tt.to, 1)), "x.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v\nwant one containing %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

// TestResolvedSpecRoundTrip: the spec.yaml a run writes (every default filled in)
// reads back as the same experiment, which is what --resume relies on.
func TestResolvedSpecRoundTrip(t *testing.T) {
	e, err := LoadFile("../examples/limits.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(b, "spec.yaml")
	if err != nil {
		t.Fatalf("the resolved spec does not parse: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(e.Spec, again.Spec) || !reflect.DeepEqual(e.Metadata, again.Metadata) {
		t.Errorf("round trip changed the spec:\n%+v\n%+v\n%s", e.Spec, again.Spec, b)
	}
}

func TestConfigNeighbours(t *testing.T) {
	spec := func(configs string) string {
		return "apiVersion: throttlelab/v1alpha1\nkind: Experiment\nmetadata: {name: nb}\nspec:\n  load: {mode: sequential, requests: 5}\n" +
			"  neighbours: [{name: probe, kind: probe}]\n  configs:\n" + configs
	}
	e, err := Parse([]byte(spec(`    - name: alone
    - name: noisy
      neighbours: [{name: hog, kind: noise, threads: 2}]
    - name: noisy-limited
      neighbours: [{name: hog, kind: noise, cpu: {limit: 500m}}]
`)), "nb.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := func(c int) string {
		var names []string
		for _, n := range e.NeighboursOf(e.Spec.Configs[c]) {
			names = append(names, n.Name+"/"+n.Kind)
		}
		return strings.Join(names, " ")
	}
	if got(0) != "probe/probe" || got(1) != "probe/probe hog/noise" || got(2) != "probe/probe hog/noise" {
		t.Errorf("neighbours: %q %q %q", got(0), got(1), got(2))
	}
	if n := e.Spec.Configs[2].Neighbours[0]; n.Threads != 1 || n.CPU.Period.Duration != 100*time.Millisecond {
		t.Errorf("defaults not applied to a config's neighbour: %+v", n)
	}
	for _, c := range []struct{ configs, want string }{
		{"    - name: a\n      neighbours: [{name: x, kind: noise}, {name: x, kind: noise}]\n", "spec.configs[0].neighbours[1].name"},
		{"    - name: a\n      neighbours: [{name: a, kind: noise}]\n", "spec.configs[0].neighbours[0].name"},
		{"    - name: a\n      neighbours: [{name: probe, kind: noise}]\n", "already the name"},
		{"    - name: a\n      neighbours: [{name: x, kind: nosuch}]\n", "spec.configs[0].neighbours[0].kind"},
	} {
		if _, err := Parse([]byte(spec(c.configs)), "nb.yaml"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error with %q", c.configs, err, c.want)
		}
	}
}

// TestCpusetParsedOnce: a cpuset is read into its count and highest CPU, is
// written back as it was written, and one that names no CPU is refused.
func TestCpusetParsedOnce(t *testing.T) {
	for _, tt := range []struct {
		in         string
		count, top int
	}{{"0-1", 2, 1}, {"3", 1, 3}, {"0,2,4-6", 5, 6}} {
		c, err := ParseCpuset(tt.in)
		if err != nil || c.Count != tt.count || c.Top != tt.top || c.String() != tt.in {
			t.Errorf("%s: %+v (%q), %v: want %d CPUs, top %d", tt.in, c, c.String(), err, tt.count, tt.top)
		}
	}
	if c := CPURange(2, 3); c.String() != "2-3" || c.Count != 2 || c.Top != 3 {
		t.Errorf("CPURange(2, 3) = %+v (%q)", c, c.String())
	}
	if c := CPURange(5, 5); c.String() != "5" || c.Count != 1 {
		t.Errorf("CPURange(5, 5) = %+v (%q)", c, c.String())
	}
	for _, bad := range []string{"x", "3-1", ","} {
		if _, err := ParseCpuset(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
