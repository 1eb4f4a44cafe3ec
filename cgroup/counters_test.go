package cgroup

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseCPUCounters(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    CPUCounters
		wantErr bool
	}{
		{"v2", "usage_usec 777\nuser_usec 700\nsystem_usec 77\nnice_usec 0\nnr_periods 9\nnr_throttled 4\nthrottled_usec 12\nnr_bursts 2\nburst_usec 30\n",
			CPUCounters{UsageUsec: 777, UserUsec: 700, SystemUsec: 77, HasUsage: true, CPUStat: CPUStat{Periods: 9, ThrottledPeriods: 4, ThrottledUsec: 12, Bursts: 2, BurstUsec: 30}}, false},
		{"v2 without the cpu controller", "usage_usec 5\nuser_usec 3\nsystem_usec 2\n", CPUCounters{UsageUsec: 5, UserUsec: 3, SystemUsec: 2, HasUsage: true}, false},
		{"v1 in ns", "nr_periods 10\nnr_throttled 3\nthrottled_time 5000999\nnr_bursts 1\nburst_time 2000000", CPUCounters{CPUStat: CPUStat{Periods: 10, ThrottledPeriods: 3, ThrottledUsec: 5000, Bursts: 1, BurstUsec: 2000}}, false},
		{"unknown lines and blank ones", "\nwait_sum 5\nnr_periods 1\n", CPUCounters{CPUStat: CPUStat{Periods: 1}}, false},
		{"bad number", "nr_periods x\n", CPUCounters{}, true},
	}
	for _, tt := range tests {
		got, err := ParseCPUCounters([]byte(tt.in))
		if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
			t.Errorf("%s: got %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
	b := []byte(tests[0].in)
	if n := testing.AllocsPerRun(100, func() { ParseCPUCounters(b) }); n != 0 {
		t.Errorf("ParseCPUCounters allocates %.0f times per call, want 0", n)
	}
}

func TestReadGroupCPU(t *testing.T) {
	write := func(dir string, files map[string]string) {
		for name, v := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	v1, v2, v2root := t.TempDir(), t.TempDir(), t.TempDir()
	write(v1, map[string]string{"cpu.cfs_quota_us": "20000\n", "cpu.cfs_period_us": "100000\n", "cpu.cfs_burst_us": "5000\n", "cpu.shares": "256\n"})
	write(v2, map[string]string{"cpu.max": "50000 100000\n", "cpu.max.burst": "0\n", "cpu.weight": "10\n"})
	tests := []struct {
		dir, version                  string
		quota                         int64
		period, burst, shares, weight uint64
		limit                         float64
	}{
		{v1, "v1", 20000, 100000, 5000, 256, 0, 0.2},
		{v2, "v2", 50000, 100000, 0, 0, 10, 0.5},
		{v2root, "v2", -1, 100000, 0, 0, 0, 0},
	}
	for _, tt := range tests {
		got, err := ReadGroupCPU(tt.dir, tt.version)
		if err != nil {
			t.Errorf("%s %s: %v", tt.version, tt.dir, err)
			continue
		}
		if got.QuotaUsec != tt.quota || got.PeriodUsec != tt.period || got.BurstUsec != tt.burst || got.Shares != tt.shares || got.Weight != tt.weight || got.LimitCores != tt.limit {
			t.Errorf("%s %s: got %+v", tt.version, tt.dir, got)
		}
	}
	if _, err := ReadGroupCPU(t.TempDir(), "v1"); err == nil {
		t.Error("a v1 group without cpu files read without error")
	}
}
