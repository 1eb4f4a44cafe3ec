package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/limitmap"
)

func readMap(t *testing.T, dir string) (*limitmap.Map, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "map.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m limitmap.Map
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return &m, b
}

// TestMapSimulated draws a small map twice: the same bytes, the grid
// printed, the report written.
func TestMapSimulated(t *testing.T) {
	var maps [][]byte
	for i := range 2 {
		dir := t.TempDir()
		args := []string{"map", "../../examples/limits.yaml", "--limit", "100m:500m:3", "--rate", "40:160:3", "--repeats", "2", "--seed", "7", "--out", dir}
		if i == 1 {
			args = append(args, "--parallel", "1")
		}
		r := run(t, args...)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		m, b := readMap(t, dir)
		maps = append(maps, b)
		if len(m.Cells) != 9 || m.Seed != 7 || m.Axis != limitmap.AxisRate {
			t.Errorf("map: %d cells, seed %d, axis %s", len(m.Cells), m.Seed, m.Axis)
		}
		for _, want := range []string{"p99 / unlimited p99", "throttled periods %", "   req/s  100m  300m  500m", "report: " + filepath.Join(dir, "report.html")} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("output lacks %q:\n%s", want, r.stdout)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
			t.Error(err)
		}
		// The answer comes before the grid, from the map written.
		if h := limitmap.Headline(m); h == "" || !strings.Contains(r.stdout, h+"\n\nmap of ") {
			t.Errorf("output does not open with the map's headline %q:\n%s", h, r.stdout)
		}
	}
	if !bytes.Equal(maps[0], maps[1]) {
		t.Error("two maps with the same seed differ")
	}
}

func TestMapBadInput(t *testing.T) {
	noRef := writeSpec(t, `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata: {name: noref}
spec:
  workload: {request: burn, burn: cpu=2ms}
  load: {mode: rate, rate: 50, duration: 1s}
  configs:
    - {name: b, cpu: {limit: 300m}}
`)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"../../examples/limits.yaml", "--limit", "1:100m:3", "--rate", "20:200:3"}, `--limit: limit range "1:100m:3": FROM is above TO`},
		{[]string{"../../examples/limits.yaml", "--limit", "100m:1:3", "--rate", "20:200"}, `--rate: rate range "20:200": want FROM:TO:STEPS`},
		{[]string{"../../examples/limits.yaml", "--limit", "100m:1:3"}, "give one second axis"},
		{[]string{"../../examples/limits.yaml", "--rate", "20:200:3"}, "--limit FROM:TO:STEPS is needed"},
		{[]string{"../../examples/limits.yaml", "--limit", "100m:1:3", "--workers", "1:4:4"}, "open loop"},
		{[]string{noRef, "--limit", "100m:1:3", "--rate", "20:200:3"}, "no unlimited config"},
		{[]string{"../../examples/limits.yaml", "--limit", "100m:1:3", "--rate", "20:200:3", "--limited", "unlimited"}, "has no CPU limit"},
	} {
		r := run(t, append([]string{"map", "--out", t.TempDir()}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("map %v: exit %d, stderr %q: want 2 and one line with %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

// TestMapMeasured measures one cell of a tiny map on real cgroups: the
// point is recorded with both figures, its results are kept, nothing is
// left running. Shapes only: the machine's noise is not the test's.
func TestMapMeasured(t *testing.T) {
	needRoot(t)
	spec := writeSpec(t, `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata: {name: tinymap}
spec:
  workload: {request: burn, burn: cpu=2ms}
  load: {mode: rate, rate: 50, arrivals: poisson, duration: 2s}
  configs:
    - name: unlimited
    - name: limited
      instances: 2
      cpu: {limit: 300m}
  repeats: 1
`)
	dir := t.TempDir()
	r := run(t, "map", spec, "--limit", "100m:300m:2", "--rate", "50:50:1", "--repeats", "1", "--measure", "1", "--out", dir)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	m, _ := readMap(t, dir)
	if len(m.Measured) != 1 {
		t.Fatalf("%d measured points, want 1", len(m.Measured))
	}
	p := m.Measured[0]
	if p.Measured.P99Ratio <= 0 || p.Measured.ReferenceP99Ms <= 0 || p.Simulated.P99Ratio <= 0 ||
		p.Measured.ThrottledPeriodsRatio < 0 || p.Measured.ThrottledPeriodsRatio > 1 {
		t.Errorf("measured point %+v", p)
	}
	if _, err := os.Stat(filepath.Join(dir, p.Dir, "runs", "limited", "load0", "r1", "summary.json")); err != nil {
		t.Errorf("the measurement's results are not kept: %v", err)
	}
	if rr := run(t, "report", filepath.Join(dir, p.Dir)); rr.code != 0 {
		t.Errorf("report of the measured point: exit %d\n%s", rr.code, rr.stderr)
	}
	if !strings.Contains(r.stdout, "measured on real cgroups against simulated") {
		t.Errorf("no measured line:\n%s", r.stdout)
	}
	if left := ourLeftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
