package record

import (
	"math"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/experiment"
)

// throttledSamples are 10 ms samples of a group limited to quota per 100 ms
// that always has work: it runs from each period's start (at 3 ms past a
// multiple of 100 ms) until its quota is spent, on one core.
func throttledSamples(quota time.Duration, n int) []cgroup.UsageSample {
	const period, phase = 100 * time.Millisecond, 3 * time.Millisecond
	var out []cgroup.UsageSample
	for k := 0; k < n; k++ {
		at := time.Duration(k) * 10 * time.Millisecond
		var usage time.Duration
		var periods uint64
		if at >= phase {
			periods = uint64((at-phase)/period) + 1
			usage = time.Duration(periods-1)*quota + min(quota, (at-phase)%period)
		}
		out = append(out, cgroup.UsageSample{At: at, Usage: []time.Duration{usage}, Throttled: []uint64{periods}, Periods: []uint64{periods}})
	}
	return out
}

func TestUsageStatsPeakPeriod(t *testing.T) {
	samples := throttledSamples(25*time.Millisecond, 300)
	limited := UsageStatsOf(samples, 0, cgroup.Settings{QuotaUsec: 25000, PeriodUsec: 100000})
	if math.Abs(limited.PeakPeriod-0.25) > 1e-9 {
		t.Errorf("peak within a period %.4f, want 0.25", limited.PeakPeriod)
	}
	// Each period spent at its start: every window of one period's length
	// holds one quota, never more (a window is at least its length).
	if math.Abs(limited.Peak100ms-0.25) > 1e-9 {
		t.Errorf("rolling 100 ms peak %.4f, want 0.25 (one quota per window)", limited.Peak100ms)
	}
	// One period's quota spent at its end and the next one's at its start:
	// a rolling 100 ms window across the boundary holds both.
	var lateEarly []cgroup.UsageSample
	for k := 0; k <= 30; k++ {
		at := time.Duration(k) * 10 * time.Millisecond
		used := min(max(at-75*time.Millisecond, 0), 25*time.Millisecond) + min(max(at-100*time.Millisecond, 0), 25*time.Millisecond)
		lateEarly = append(lateEarly, cgroup.UsageSample{At: at, Usage: []time.Duration{used}})
	}
	if u := UsageStatsOf(lateEarly, 0, cgroup.Settings{QuotaUsec: -1}); math.Abs(u.Peak100ms-0.5) > 1e-9 {
		t.Errorf("rolling 100 ms peak across a boundary %.4f, want 0.5 (two quotas)", u.Peak100ms)
	}
	if u := UsageStatsOf(samples, 0, cgroup.Settings{QuotaUsec: -1}); u.PeakPeriod != 0 {
		t.Errorf("without a quota: peak within a period %.4f, want 0 (no periods)", u.PeakPeriod)
	}
}

func TestAggregatePeakPeriod(t *testing.T) {
	a, b := run("lim", 5, 10, 100, 10, 5, 0, 0.2, 0.1), run("lim", 5, 10, 100, 10, 5, 0, 0.2)
	a.Usage["lim-0"] = UsageStats{Mean: 0.2, PeakPeriod: 0.24}
	b.Usage["lim-0"] = UsageStats{Mean: 0.2, PeakPeriod: 0.25}
	cs := Aggregate(experiment.Config{Name: "lim", Instances: 2}, "load0", []*Run{a, b})
	if cs.PeakPeriodCores != 0.25 {
		t.Errorf("peak_period_cores %.3f, want the busiest instance's 0.25", cs.PeakPeriodCores)
	}
}
