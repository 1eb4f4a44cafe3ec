package cgroup

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestPreadFileReadsAfresh: each Read gives the file's content as it is
// now, shorter or longer than before; an empty file is io.EOF; a closed
// one an error naming the file.
func TestPreadFileReadsAfresh(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cpuacct.usage")
	if err := os.WriteFile(p, []byte("123456789\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := OpenPreadFile(p, 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"123456789\n", "5\n", "98765432101234\n"} {
		if err := os.WriteFile(p, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := f.Read()
		if err != nil || string(b) != want {
			t.Fatalf("read %q, %v; want %q", b, err, want)
		}
	}
	os.WriteFile(p, nil, 0o644)
	if _, err := f.Read(); !errors.Is(err, io.EOF) {
		t.Fatalf("empty: %v, want EOF", err)
	}
	f.Close()
	if _, err := f.Read(); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("closed: %v, want an error naming the file", err)
	}
}

// BenchmarkPreadFile reads the host's root cpu.stat (cgroupfs; a regular
// file where there is none) through PreadFile and, in the same run, through
// os.File.ReadAt, which reads on to the end of the file (a second pread, for
// which cgroupfs makes the content anew). readat/pread is the ratio of their
// times.
func BenchmarkPreadFile(b *testing.B) {
	p := "/sys/fs/cgroup/cpu/cpu.stat"
	if _, err := os.Stat(p); err != nil {
		p = "/sys/fs/cgroup/cpu.stat"
	}
	if _, err := os.Stat(p); err != nil {
		p = filepath.Join(b.TempDir(), "cpu.stat")
		os.WriteFile(p, []byte("nr_periods 1\nnr_throttled 0\nthrottled_time 0\n"), 0o644)
	}
	f, err := OpenPreadFile(p, 1024)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ref, err := os.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer ref.Close()
	buf := make([]byte, 1024)
	var pread, readAt time.Duration
	for range b.N {
		t0 := time.Now()
		if _, err := f.Read(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := ref.ReadAt(buf, 0); err != nil && err != io.EOF {
			b.Fatal(err)
		}
		readAt += time.Since(t1)
		pread += t1.Sub(t0)
	}
	b.ReportMetric(float64(pread)/float64(b.N), "pread-ns")
	b.ReportMetric(float64(readAt)/float64(pread), "readat/pread")
}
