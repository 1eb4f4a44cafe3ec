package cgroup

import (
	"math"
	"testing"
)

// TestSplitStallMeasured feeds SplitStall the cases measured in docs/top.md
// (per second of wall time: cpu.stat's throttled time, cpu.pressure "some",
// usage) and checks its split against what each case's own accounting
// says, independently of the rule: a scenario's busy loops keep n CPUs
// busy (n = 1 or 2), each CPU's second is running + waiting + throttled, so
// the time waited for a CPU while not throttled, per CPU as PSI averages
// it, is (n - usage - throttled) / n.
func TestSplitStallMeasured(t *testing.T) {
	const (
		alone    = iota // throttled alone: the quota is most of the stall
		crowded         // unlimited and crowded: all of it is contention
		both            // throttled and crowded: both causes
		hostBusy        // throttled on the busy host: both causes
	)
	tests := []struct {
		kernel, scenario string
		n                int // CPUs kept busy by the group's loops
		thr, some, usage float64
		shape            int
	}{
		{"6.1", "a", 1, 0.886, 0.795, 0.207, alone},
		{"6.1", "b", 1, 0, 0.492, 0.493, crowded},
		{"6.1", "c", 1, 0.730, 0.795, 0.193, both},
		{"6.1", "d", 2, 1.758, 0.906, 0.210, alone},
		{"6.1", "e", 2, 1.017, 0.700, 0.545, both},
		{"6.1", "f", 2, 0, 0.495, 0.954, crowded},
		{"6.12", "a", 1, 0.771, 0.781, 0.195, alone},
		{"6.12", "b", 1, 0, 0.523, 0.512, crowded},
		{"6.12", "c", 1, 0.648, 0.805, 0.201, both},
		{"6.12", "d", 2, 1.829, 0.891, 0.198, alone},
		{"6.12", "e", 2, 0.965, 0.695, 0.518, both},
		{"6.12", "f", 2, 0, 0.517, 0.928, crowded},
		// A second run of the same.
		{"6.1", "a2", 1, 0.795, 0.797, 0.201, alone},
		{"6.1", "b2", 1, 0, 0.501, 0.500, crowded},
		{"6.1", "c2", 1, 0.676, 0.804, 0.204, both},
		{"6.1", "d2", 2, 1.827, 0.910, 0.186, alone},
		{"6.1", "e2", 2, 0.872, 0.729, 0.570, both},
		{"6.12", "a2", 1, 0.784, 0.774, 0.187, alone},
		{"6.12", "c2", 1, 0.741, 0.858, 0.162, both},
		{"6.12", "d2", 2, 1.811, 0.924, 0.202, alone},
		{"6.12", "e2", 2, 0.831, 0.676, 0.547, both},
		// The host (6.18, hybrid: quota on v1, PSI of the v2 group), busy
		// with other work on the same CPUs.
		{"6.18", "a", 1, 0.435, 0.799, 0.197, hostBusy},
		{"6.18", "b", 1, 0, 0.753, 0.247, crowded},
		{"6.18", "c", 1, 0.091, 0.824, 0.175, hostBusy},
		{"6.18", "d", 2, 1.128, 0.899, 0.200, hostBusy},
		{"6.18", "a3", 1, 0.696, 0.802, 0.199, hostBusy},
		{"6.18", "b3", 1, 0, 0.580, 0.419, crowded},
		{"6.18", "c3", 1, 0.490, 0.800, 0.202, both},
		{"6.18", "d3", 2, 1.674, 0.898, 0.200, alone},
	}
	for _, tt := range tests {
		name := tt.kernel + "/" + tt.scenario
		got := SplitStall(tt.some, tt.thr, tt.usage, 1, 2)
		if math.Abs(got.QuotaSeconds+got.ContentionSeconds-tt.some) > 1e-9 {
			t.Errorf("%s: quota %.3f + contention %.3f is not the stall %.3f", name, got.QuotaSeconds, got.ContentionSeconds, tt.some)
		}
		n := float64(tt.n)
		want := min(max((n-tt.usage-tt.thr)/n, 0), tt.some)
		if math.Abs(got.ContentionSeconds-want) > 0.1 {
			t.Errorf("%s: contention %.3f, the case's own accounting says %.3f", name, got.ContentionSeconds, want)
		}
		switch tt.shape {
		case alone:
			if got.ContentionSeconds > 0.1*tt.some {
				t.Errorf("%s, throttled alone: contention %.3f of a stall of %.3f", name, got.ContentionSeconds, tt.some)
			}
		case crowded:
			if got.QuotaSeconds != 0 || got.ContentionSeconds != tt.some {
				t.Errorf("%s, crowded without a quota: %+v, want all of %.3f contention", name, got, tt.some)
			}
		case both, hostBusy:
			if got.QuotaSeconds <= 0 || got.ContentionSeconds <= 0 {
				t.Errorf("%s, throttled and crowded: %+v, want both causes", name, got)
			}
		}
	}
}

func TestSplitStallBounds(t *testing.T) {
	tests := []struct {
		name                   string
		some, thr, usage, wall float64
		cpus                   int
		quota, contention      float64
	}{
		{"no stall", 0, 0.5, 0.2, 1, 2, 0, 0},
		{"no interval", 0.5, 0.5, 0.2, 0, 2, 0, 0},
		{"throttled longer than the stall: capped", 0.5, 0.9, 0.5, 1, 2, 0.5, 0},
		// Stalled throughout: the CPUs it waited on are unknown, taken as one.
		{"stalled throughout", 1, 0.6, 0, 1, 4, 0.6, 0.4},
		// 3 cores busy at a stall of 0.25 would be 4 CPUs: capped at the 2 there are.
		{"more CPUs than there are", 0.25, 1, 3, 1, 2, 0.25, 0},
		{"four CPUs throttled alike", 0.5, 2, 2, 1, 8, 0.5, 0},
		{"four CPUs, half the stall contention", 0.5, 1, 2, 1, 8, 0.25, 0.25},
	}
	for _, tt := range tests {
		got := SplitStall(tt.some, tt.thr, tt.usage, tt.wall, tt.cpus)
		if math.Abs(got.QuotaSeconds-tt.quota) > 1e-9 || math.Abs(got.ContentionSeconds-tt.contention) > 1e-9 {
			t.Errorf("%s: %+v, want quota %g, contention %g", tt.name, got, tt.quota, tt.contention)
		}
	}
}
