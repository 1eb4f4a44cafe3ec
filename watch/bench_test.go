package watch_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/watch"
)

// benchGroups makes n empty groups on this host under throttlelab/bench-PID,
// with quota (us per 100 ms; -1: none), or skips (run under the host lock,
// as root).
func benchGroups(b *testing.B, n int, quota int64) {
	b.Helper()
	if os.Geteuid() != 0 {
		b.Skip("real cgroups need root")
	}
	m, err := cgroup.NewManager("/", fmt.Sprintf("bench-%d", os.Getpid()), false)
	if err != nil {
		b.Skipf("cannot manage cgroups here: %v", err)
	}
	b.Cleanup(func() {
		if err := m.Cleanup(true); err != nil {
			b.Error(err)
		}
	})
	for i := 0; i < n; i++ {
		if _, err := m.NewGroup("g"+strconv.Itoa(i), cgroup.Settings{QuotaUsec: quota, PeriodUsec: 100000}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSample measures one sample of every group on the host (32 made
// for it, plus the host's own) the way top takes it every 10 ms: files kept
// open, read with pread, parsed without allocating. The reference, in the
// same run, opens, reads and closes the same files each time and parses them
// with cgroup.ParseCPUStat. cpu-%-at-10ms is the share of one core that
// sampling every 10 ms costs; reopen/pread is the reference's time over top's.
//
// quota has the 32 groups limited, no-quota without a limit: on v1, where
// cpu.stat is a file of its own, a group without a quota has it read once,
// not at every sample (its bandwidth counters do not move).
func BenchmarkSample(b *testing.B) {
	b.Run("quota", func(b *testing.B) { benchSample(b, 50000) })
	b.Run("no-quota", func(b *testing.B) { benchSample(b, -1) })
}

func benchSample(b *testing.B, quota int64) {
	benchGroups(b, 32, quota)
	w, err := watch.New(watch.Options{Root: "/"})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	refs, err := watch.Discover("/", w.Source())
	if err != nil {
		b.Fatal(err)
	}
	reopen := func() {
		for _, r := range refs {
			if r.CPUDir != "" {
				raw, err := os.ReadFile(filepath.Join(r.CPUDir, "cpu.stat"))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := cgroup.ParseCPUStat(raw); err != nil {
					b.Fatal(err)
				}
			}
			if w.Source().Version == "v1" && r.AcctDir != "" {
				raw, err := os.ReadFile(filepath.Join(r.AcctDir, "cpuacct.usage"))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := strconv.ParseUint(string(raw[:len(raw)-1]), 10, 64); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	var pread, naive time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		w.Sample(time.Duration(i+1) * 10 * time.Millisecond)
		t1 := time.Now()
		reopen()
		pread, naive = pread+t1.Sub(t0), naive+time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(len(refs)), "groups")
	b.ReportMetric(float64(pread.Microseconds())/n, "pread-us/sample")
	b.ReportMetric(float64(naive.Microseconds())/n, "reopen-us/sample")
	b.ReportMetric(float64(naive)/float64(pread), "reopen/pread")
	b.ReportMetric(float64(pread)/n/float64(10*time.Millisecond)*100, "cpu-%-at-10ms")
}
