package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/verdict"
)

func TestPresetsList(t *testing.T) {
	r := run(t, "presets")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for i := 1; i <= 15; i++ {
		if !strings.Contains(r.stdout, " F"+strconv.Itoa(i)+" ") {
			t.Errorf("no preset for F%d in\n%s", i, r.stdout)
		}
	}
	r = run(t, "presets", "show", "f09-burn-flow")
	if r.code != 0 || !strings.Contains(r.stdout, "kind: Experiment") || !strings.Contains(r.stdout, "# F9") {
		t.Errorf("show: exit %d\n%s", r.code, r.stdout)
	}
	r = run(t, "presets", "show", "f01-logjam", "--quick", "--cores", "2")
	if r.code != 0 || !strings.Contains(r.stdout, "# f01-logjam --quick for 2 cores:") || !strings.Contains(r.stdout, "sample:100") {
		t.Errorf("show --quick: exit %d\n%s", r.code, r.stdout)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"presets", "show", "nosuch"}, "no preset \"nosuch\""},
		{[]string{"run", "nosuch"}, "neither a spec file nor a preset"},
		{[]string{"sim", "nosuch.yaml"}, "no such spec file"},
		{[]string{"run", "../../examples/limits.yaml", "--quick"}, "--quick is for presets"},
	} {
		r := run(t, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

// TestPresetSimulated simulates a preset: the verdict is printed, written
// and shown in the report.
func TestPresetSimulated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "f09")
	r := run(t, "sim", "f09-burn-flow", "--quick", "--cores", "2", "--out", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "F9 95% interval: p99 ms at 0.3 CPU ") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The answer first: the verdict in one short line, then the headline
	// sentence; the check, figures and intervals after the table.
	lines := strings.Split(r.stdout, "\n")
	if lines[0] != "F9 REPRODUCED (f09-burn-flow): 4 of 4 conditions hold" || !strings.HasPrefix(lines[1], "The cpu-100m instance's p99 was ") {
		t.Errorf("stdout starts %q, %q: want the short verdict, then the headline sentence", lines[0], lines[1])
	}
	assertVerdict(t, dir, "f09-burn-flow")
}

func assertVerdict(t *testing.T, dir, preset string) {
	t.Helper()
	if v, _ := readExpSummary(t, dir).Verdict.(map[string]any); v == nil || v["preset"] != preset {
		t.Errorf("summary.json has no verdict for %s: %+v", preset, v)
	}
	b, err := os.ReadFile(filepath.Join(dir, "verdict.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v verdict.Verdict
	if err := json.Unmarshal(b, &v); err != nil || v.Preset != preset || v.Numbers == "" {
		t.Fatalf("verdict %+v, %v", v, err)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !strings.Contains(string(html), `class="verdict `) || !strings.Contains(string(html), v.Numbers[:20]) {
		t.Errorf("the report does not show the verdict: %v", err)
	}
}

// TestPresetMeasured runs a quick preset for real: the verdict comes from
// real cgroups.
func TestPresetMeasured(t *testing.T) {
	needRoot(t)
	dir := filepath.Join(t.TempDir(), "f09")
	r := run(t, "run", "f09-burn-flow", "--quick", "--out", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "F9 ") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	assertVerdict(t, dir, "f09-burn-flow")
	if left := ourLeftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
