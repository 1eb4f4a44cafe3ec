package cgroup_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
)

// realGroups makes n unlimited groups on this host, or skips.
func realGroups(tb testing.TB, n int) (*cgroup.Manager, []*cgroup.Group) {
	tb.Helper()
	cgrouptest.Require(tb)
	m, err := cgroup.NewManager("/", fmt.Sprintf("sampler-%d", os.Getpid()), false)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := m.Cleanup(true); err != nil {
			tb.Error(err)
		}
	})
	var gs []*cgroup.Group
	for i := 0; i < n; i++ {
		g, err := m.NewGroup("g"+strconv.Itoa(i), cgroup.Settings{QuotaUsec: -1})
		if err != nil {
			tb.Fatal(err)
		}
		gs = append(gs, g)
	}
	return m, gs
}

func TestSamplerReal(t *testing.T) {
	_, gs := realGroups(t, 2)
	cmd := exec.Command("sh", "-c", "for d in \"$@\"; do echo $$ > \"$d/cgroup.procs\"; done; while :; do :; done", "sh")
	for _, d := range gs[0].Dirs {
		cmd.Args = append(cmd.Args, d)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	s, err := cgroup.NewSampler(gs)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var samples []cgroup.UsageSample
	ctx, cancel := context.WithCancel(context.Background())
	s.Run(ctx, 10*time.Millisecond, func(u cgroup.UsageSample) {
		samples = append(samples, u)
		// Until the busy group has used 50 ms of CPU, or 2000 samples.
		if u.Usage[0] > 50*time.Millisecond || len(samples) >= 2000 {
			cancel()
		}
	})
	last := samples[len(samples)-1]
	if last.Usage[0] <= 50*time.Millisecond || last.Usage[1] != 0 || last.Throttled[1] != 0 {
		t.Errorf("busy group used %s, idle group %s", last.Usage[0], last.Usage[1])
	}
	for i := 1; i < len(samples); i++ {
		if samples[i].Usage[0] < samples[i-1].Usage[0] || samples[i].At <= samples[i-1].At {
			t.Fatalf("samples go backwards at %d", i)
		}
	}
}

// BenchmarkSampler16 measures one sample of 16 real groups, the load of sampling
// every 10 ms, against a naive reader (open, read, close, parse each file) in the
// same run. cpu-%-at-10ms is the share of one core the sampler takes.
func BenchmarkSampler16(b *testing.B) {
	_, gs := realGroups(b, 16)
	s, err := cgroup.NewSampler(gs)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	dst, thr := make([]time.Duration, len(gs)), make([]uint64, len(gs))
	b.Run("sampler", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := s.Sample(dst, thr, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(10*time.Millisecond)*100, "cpu-%-at-10ms")
	})
	b.Run("naive-readfile", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for _, g := range gs {
				p := filepath.Join(g.Dirs["cpuacct"], "cpuacct.usage")
				if g.Dirs["cpuacct"] == "" {
					p = filepath.Join(g.Dirs["cpu"], "cpu.stat")
				}
				raw, err := os.ReadFile(p)
				if err != nil {
					b.Fatal(err)
				}
				strconv.ParseUint(strings.Fields(string(raw))[0], 10, 64)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(10*time.Millisecond)*100, "cpu-%-at-10ms")
	})
}
