package report

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/stats"
	"github.com/throttlelab/throttlelab/units"
)

// TestHeadlineFromRecordedRun reads the numbers back out of the headline of
// a measured and a simulated run of examples/limits.yaml and checks each
// against the summary's own figure, so the sentence cannot say what the
// data does not.
func TestHeadlineFromRecordedRun(t *testing.T) {
	for _, dir := range []string{"testdata/limits", "testdata/limits-sim"} {
		t.Run(dir, func(t *testing.T) { checkHeadline(t, dir) })
	}
}

func checkHeadline(t *testing.T, dir string) {
	src, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lim, ref *record.ConfigSummary
	for i := range src.Summary.Configs {
		switch c := &src.Summary.Configs[i]; c.Config {
		case "limited":
			lim = c
		case "unlimited":
			ref = c
		}
	}
	if lim == nil || ref == nil || lim.P99VsReferenceCI95 == nil {
		t.Fatal("the fixture's summary lacks the limited config, the reference or the ratio's interval")
	}
	h := Headline(src)
	t.Log(h)
	for _, bad := range headlineMismatches(h, *lim, *ref) {
		t.Error(bad)
	}
	// The comparison sees a sentence written from other figures: each
	// tampered figure is caught.
	for name, tamper := range map[string]func(c *record.ConfigSummary){
		"ratio": func(c *record.ConfigSummary) { c.P99VsReference *= 1.2 },
		"interval": func(c *record.ConfigSummary) {
			c.P99VsReferenceCI95 = &stats.Interval{c.P99VsReferenceCI95[0] / 2, c.P99VsReferenceCI95[1]}
		},
		"throttled": func(c *record.ConfigSummary) { c.ThrottledPct += 5 },
		"cores":     func(c *record.ConfigSummary) { c.MeanCores *= 1.5 },
	} {
		s := *src.Summary
		s.Configs = append([]record.ConfigSummary(nil), s.Configs...)
		for i := range s.Configs {
			if s.Configs[i].Config == "limited" {
				tamper(&s.Configs[i])
			}
		}
		if len(headlineMismatches(SummaryHeadline(src.Spec, &s), *lim, *ref)) == 0 {
			t.Errorf("a headline written with a tampered %s passes the comparison", name)
		}
	}
}

// headlineMismatches reads the figures back out of a limits.yaml headline
// and compares each with the summary's (limited config lim, reference
// ref), to the precision printed.
func headlineMismatches(h string, lim, ref record.ConfigSummary) []string {
	re := regexp.MustCompile(`^The limited instances' p99 was ([0-9.]+)x \[([0-9.]+), ([0-9.]+)\] the unlimited one's \(([0-9.]+) ms against ([0-9.]+) ms\), throttled in ([0-9.]+)% of periods while using ([0-9.]+) of their ([0-9.]+) CPU on average\.$`)
	m := re.FindStringSubmatch(h)
	if m == nil {
		return []string{fmt.Sprintf("headline %q is not the sentence expected for limits.yaml", h)}
	}
	num := func(i int) float64 {
		v, _ := strconv.ParseFloat(m[i], 64) // the pattern holds only numbers
		return v
	}
	checks := []struct {
		name string
		i    int
		want float64
	}{
		{"p99 ratio", 1, lim.P99VsReference},
		{"ratio interval low", 2, lim.P99VsReferenceCI95[0]},
		{"ratio interval high", 3, lim.P99VsReferenceCI95[1]},
		{"limited p99 ms", 4, lim.P99Ms},
		{"reference p99 ms", 5, ref.P99Ms},
		{"throttled %", 6, lim.ThrottledPct},
		{"cores per instance", 7, lim.MeanCores / float64(lim.Instances)},
		{"limit", 8, 0.25},
	}
	var out []string
	for _, c := range checks {
		if tol := 0.5 * math.Pow(10, -float64(decimals(m[c.i]))); math.Abs(num(c.i)-c.want) > tol+1e-9 {
			out = append(out, fmt.Sprintf("%s: the headline says %s, the summary %g", c.name, m[c.i], c.want))
		}
	}
	// The interval holds the point it surrounds.
	if !(num(2) <= num(1) && num(1) <= num(3)) {
		out = append(out, fmt.Sprintf("the ratio %s lies outside its interval [%s, %s]", m[1], m[2], m[3]))
	}
	return out
}

func decimals(s string) int {
	if _, frac, ok := strings.Cut(s, "."); ok {
		return len(frac)
	}
	return 0
}

// TestHeadlineCases checks the sentence's shapes on constructed summaries:
// which config it picks and what it leaves out when the summary has no
// figure for it.
func TestHeadlineCases(t *testing.T) {
	spec := func(configs ...experiment.Config) *experiment.Experiment {
		e := &experiment.Experiment{}
		e.Spec.Configs = configs
		return e
	}
	limited := func(name, limit string) experiment.Config {
		c := experiment.Config{Name: name}
		var err error
		if c.CPU.Limit, err = units.ParseCPUQuantity(limit); err != nil {
			t.Fatal(err)
		}
		return c
	}
	cases := []struct {
		name string
		e    *experiment.Experiment
		s    record.ExperimentSummary
		want string
	}{
		{"worst of two limits, no intervals",
			spec(experiment.Config{Name: "none"}, limited("one", "1"), limited("two", "2")),
			record.ExperimentSummary{Configs: []record.ConfigSummary{
				{Config: "none", Load: "l", Instances: 1, IsReference: true, P99Ms: 10, P99VsReference: 1},
				{Config: "one", Load: "l", Instances: 8, P99Ms: 30, P99VsReference: 3, ThrottledPct: 42, MeanCores: 4},
				{Config: "two", Load: "l", Instances: 8, P99Ms: 12, P99VsReference: 1.2, ThrottledPct: 5, MeanCores: 4},
			}},
			"The one instances' p99 was 3.0x the none one's (30.0 ms against 10.0 ms; the highest of 2 configs), throttled in 42% of periods while using 0.50 of their 1 CPU on average."},
		{"no reference: the most throttled, its p99 and interval",
			spec(limited("a", "500m"), limited("b", "500m")),
			record.ExperimentSummary{Configs: []record.ConfigSummary{
				{Config: "a", Load: "l", Instances: 1, P99Ms: 8, ThrottledPct: 3, MeanCores: 0.2},
				{Config: "b", Load: "l", Instances: 1, P99Ms: 80, P99MsCI95: &stats.Interval{70, 95}, ThrottledPct: 30, MeanCores: 0.3},
			}},
			"The b instance's p99 was 80.0 ms [70.0, 95.0] (the highest of 2 configs), throttled in 30% of periods while using 0.30 of its 0.5 CPU on average."},
		{"no limit, two loads",
			spec(experiment.Config{Name: "ref"}, experiment.Config{Name: "pinned"}),
			record.ExperimentSummary{Configs: []record.ConfigSummary{
				{Config: "ref", Load: "a", Instances: 2, IsReference: true, P99Ms: 10, P99VsReference: 1},
				{Config: "pinned", Load: "a", Instances: 2, P99Ms: 9, P99VsReference: 0.9, MeanCores: 1},
				{Config: "ref", Load: "b", Instances: 2, IsReference: true, P99Ms: 10, P99VsReference: 1},
				{Config: "pinned", Load: "b", Instances: 2, P99Ms: 15, P99VsReference: 1.5, MeanCores: 1.5},
			}},
			"The pinned instances' p99 was 1.5x the ref ones' under load b (15.0 ms against 10.0 ms; the highest of 2 configs), using 0.75 CPU each on average."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := SummaryHeadline(c.e, &c.s); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestGridHeadline checks the map's sentence finds the smallest limit from
// which up every cell stays within the bound, and reports the cell below.
func TestGridHeadline(t *testing.T) {
	rate := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) + " req/s" }
	cell := func(limit int64, load, ratio, thr float64) GridCell {
		return GridCell{LimitMilli: limit, Load: load, P99Ratio: ratio, ThrottledPct: thr}
	}
	g := Grid{Limited: "limited", Reference: "unlimited", Instances: 4, Load: rate}
	cases := []struct {
		name  string
		cells []GridCell
		want  string
	}{
		{"knee", []GridCell{cell(250, 20, 1.5, 10), cell(500, 20, 1.1, 1), cell(250, 100, 0, 0), cell(500, 100, 1.9, 20), cell(1000, 20, 1, 0), cell(1000, 100, 1.2, 2)},
			"The limited instances' p99 stayed within 2.0x the unlimited one's at every load from 20 req/s to 100 req/s with a limit of 500m per instance or more; at 250m it was overloaded at 100 req/s (the limits add up to less than the work offered)."},
		{"knee at the top", []GridCell{cell(250, 20, 5, 40), cell(500, 20, 2.5, 20), cell(1000, 20, 1.2, 1)},
			"The limited instances' p99 stayed within 2.0x the unlimited one's at 20 req/s with a limit of 1 per instance or more; at 500m it reached 2.5x at 20 req/s, throttled in 20% of periods."},
		{"all within", []GridCell{cell(250, 20, 1.5, 10), cell(500, 20, 1.1, 1)},
			"Every limit mapped (250m to 500m per instance) kept the limited instances' p99 within 2.0x the unlimited one's at 20 req/s; the closest reached 1.5x at 20 req/s, throttled in 10% of periods."},
		{"none within", []GridCell{cell(250, 20, 9, 60), cell(500, 20, 2, 30)},
			"No limit mapped kept the limited instances' p99 within 2.0x the unlimited one's at 20 req/s: the largest, 500m per instance, reached 2.0x at 20 req/s, throttled in 30% of periods."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g.Cells = c.cells
			if got := GridHeadline(g, 2); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}
