package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/internal/golden"
)

// TestAdviseCSV drives advise on a committed CSV of cumulative usage (12 s
// of jittered 10 ms samples: 0.1 cores with 1 core for 30 ms every 250 ms):
// the text (the answer, and with --details the grid) and the JSON are golden files (go test ./cmd/throttlelab -run
// TestAdviseCSV -update rewrites them), and the JSON carries the fields the
// issue names.
func TestAdviseCSV(t *testing.T) {
	csv := filepath.Join("testdata", "advise-usage.csv")
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"advise.txt", nil},
		{"advise.json", []string{"-o", "json"}},
		{"advise-wall-clock.txt", []string{"--wall-clock", "--max-delay", "20ms", "--details"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			r := run(t, append([]string{"advise", "--csv", csv, "--grid", "6", "--limit", "300m"}, tc.args...)...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			golden.Compare(t, filepath.Join("testdata", tc.golden), []byte(r.stdout))
		})
	}

	r := run(t, "advise", "--csv", csv, "--grid", "6", "--limit", "300m", "-o", "json")
	var a map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &a); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	point := []string{"limit_millicores", "burst_millicores", "period_us", "throttled_periods_ratio", "throttled_seconds", "added_delay_p50_ms", "added_delay_p99_ms"}
	has := func(what string, m any, keys ...string) {
		o, ok := m.(map[string]any)
		if !ok {
			t.Fatalf("%s: %T, want an object", what, m)
		}
		for _, k := range keys {
			if _, ok := o[k]; !ok {
				t.Errorf("%s has no %q", what, k)
			}
		}
	}
	evs, _ := a["evaluations"].([]any)
	if len(evs) == 0 {
		t.Fatalf("no evaluations:\n%s", r.stdout)
	}
	counted := 0
	for _, e := range evs {
		// A point outside the band is counted, not replayed: it says so
		// and has no throttled time or delays.
		if c, _ := e.(map[string]any)["counts_only"].(bool); c {
			counted++
			has("an evaluation only counted", e, point[:4]...)
			for _, k := range point[4:] {
				if _, ok := e.(map[string]any)[k]; ok {
					t.Errorf("an evaluation only counted has %q", k)
				}
			}
		} else {
			has("an evaluation", e, point...)
		}
		if v := e.(map[string]any)["throttled_periods_ratio"].(float64); v < 0 || v > 1 {
			t.Errorf("throttled_periods_ratio %v: want 0..1", v)
		}
	}
	if counted == 0 || counted == len(evs) {
		t.Errorf("%d of %d evaluations only counted: want the band replayed and the rest counted", counted, len(evs))
	}
	// --all replays every point.
	var all map[string]any
	r = run(t, "advise", "--csv", csv, "--grid", "6", "--limit", "300m", "-o", "json", "--all")
	if err := json.Unmarshal([]byte(r.stdout), &all); err != nil {
		t.Fatalf("--all: %v\n%s", err, r.stdout)
	}
	allEvs, _ := all["evaluations"].([]any)
	for _, e := range allEvs {
		has("an evaluation with --all", e, point...)
	}
	if !reflect.DeepEqual(all["recommendation"], a["recommendation"]) {
		t.Errorf("the recommendation with --all differs:\n%v\nwithout:\n%v", all["recommendation"], a["recommendation"])
	}
	has("recommendation", a["recommendation"], append(point, "target")...)
	has("sampled", a["sampled"], "duration_seconds", "samples", "cpu_stat")
	if bs, _ := a["baselines"].([]any); len(bs) != 4 {
		t.Errorf("baselines %v: want krr default, krr simple_limit, VPA target, mean", a["baselines"])
	}
	if !strings.Contains(r.stdout, `"missing": "needs 75 s of samples, has 12.0 s"`) {
		t.Errorf("the krr baselines do not say why they are missing on 12 s of samples")
	}
}

// TestReportAdviseSection: throttlelab report adds the advice of each
// config's first run, with its two charts; a run throttled under its limit
// has its demand rebuilt from its throttling counters, as advise
// RESULTS_DIR does, and says so with the reconstruction's warning.
func TestReportAdviseSection(t *testing.T) {
	dir := copyDir(t, "../../report/testdata/limits")
	r := run(t, "report", dir)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	_, sec, ok := strings.Cut(page, `<section class="load" id="advise">`)
	if !ok {
		t.Fatalf("no advise section in the report")
	}
	for _, want := range []string{
		"<h3>limits, config unlimited: instance unlimited-0 in run unlimited/load0/r1</h3>",
		"<p><strong>Set the CPU limit to ",
		`id="adv0-0-use"`, `id="adv0-0-curve"`,
		">burst = limit<",
		"its demand was rebuilt from the throttling counters",
		"Warning: the group was throttled in ",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("the advise section has no %q", want)
		}
	}
}
