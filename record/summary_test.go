package record

import (
	"testing"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/loadgen"
)

func run(config string, p50, p99, rps float64, periods, throttled, usec uint64, cores ...float64) *Run {
	r := &Run{Config: config, Load: "load0", Usage: map[string]UsageStats{},
		Summary: &loadgen.Totals{Requests: 100, OK: 98, ThroughputRPS: rps, SameInstanceRate: 0.5,
			Latency: loadgen.LatencySummary{P50: p50, P90: p50 * 2, P99: p99, P999: p99 * 2, Max: p99 * 3}},
		Total: cgroup.CPUStat{Periods: periods, ThrottledPeriods: throttled, ThrottledUsec: usec}}
	for i, c := range cores {
		r.Usage[config+"-"+string(rune('0'+i))] = UsageStats{Mean: c, Peak100ms: 2 * c, Peak1s: 1.5 * c}
	}
	return r
}

func TestSummarize(t *testing.T) {
	e := &experiment.Experiment{}
	e.Metadata.Name = "x"
	e.Spec.Configs = []experiment.Config{{Name: "ref", Instances: 1}, {Name: "lim", Instances: 2}}
	e.Spec.Loads = []experiment.Load{{Name: "load0"}}
	e.Spec.Reference = "ref"
	runs := []*Run{
		run("ref", 5, 10, 100, 0, 0, 0, 0.5),
		run("lim", 5, 30, 90, 100, 10, 2000, 0.2, 0.3),
		run("ref", 7, 20, 110, 0, 0, 0, 0.7),
		run("lim", 9, 50, 80, 100, 30, 4000, 0.4, 0.1),
		run("lim", 6, 40, 85, 200, 20, 3000, 0.3, 0.3),
	}
	s := Summarize(e, runs)
	if len(s.Configs) != 2 {
		t.Fatalf("configs %+v", s.Configs)
	}
	ref, lim := s.Configs[0], s.Configs[1]
	tests := []struct {
		name      string
		got, want float64
	}{
		{"ref p50 (median of two: their mean)", ref.P50Ms, 6},
		{"ref p99", ref.P99Ms, 15},
		{"lim p99 (median of three)", lim.P99Ms, 40},
		{"lim p90", lim.P90Ms, 12},
		{"lim p99.9", lim.P999Ms, 80},
		{"lim max (the largest)", lim.MaxMs, 150},
		{"lim req/s", lim.ThroughputRPS, 85},
		{"lim throttled % (summed periods)", lim.ThrottledPct, 15},
		{"lim throttled ms (summed)", lim.ThrottledMs, 9},
		{"lim mean cores (instances summed, repeats averaged)", lim.MeanCores, 0.5333333333333333},
		{"lim peak 100ms (busiest instance)", lim.Peak100msCores, 0.8},
		{"lim peak 1s", lim.Peak1sCores, 0.6},
		{"lim same instance", lim.SameInstanceRate, 0.5},
		{"lim p99 / ref p99", lim.P99VsReference, 40.0 / 15},
		{"ref p99 / ref p99", ref.P99VsReference, 1},
	}
	for _, tt := range tests {
		if d := tt.got - tt.want; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if lim.Repeats != 3 || lim.Requests != 300 || lim.Errors != 6 || !ref.IsReference || lim.IsReference || lim.Instances != 2 {
		t.Errorf("counts %+v", lim)
	}
	if rows := s.Rows(); len(rows) != 2 || rows[1].Label != "lim" || rows[1].P99VsReference != lim.P99VsReference {
		t.Errorf("rows %+v: want ref, then lim with its figures", rows)
	}
}
