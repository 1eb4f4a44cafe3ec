package cgroup

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSamplerOnFakeTrees(t *testing.T) {
	// v1 hybrid: usage from cpuacct.usage (ns), in its own hierarchy.
	m, _ := fakeManager(t, "hybrid-host", "1:cpu:/\n", map[string]string{
		"sys/fs/cgroup/unified/cgroup.controllers": "",
		"sys/fs/cgroup/cpu/cpu.shares":             "1024\n",
		"sys/fs/cgroup/cpuacct/cpuacct.usage":      "0\n",
	}, false)
	a, _ := m.NewGroup("a", Settings{QuotaUsec: -1})
	b, _ := m.NewGroup("b", Settings{QuotaUsec: -1})
	os.WriteFile(filepath.Join(a.Dirs["cpuacct"], "cpuacct.usage"), []byte("1500000\n"), 0o644)
	os.WriteFile(filepath.Join(b.Dirs["cpuacct"], "cpuacct.usage"), []byte("42\n"), 0o644)
	os.WriteFile(filepath.Join(a.Dirs["cpu"], "cpu.stat"), []byte("nr_periods 10\nnr_throttled 3\nthrottled_time 5000\n"), 0o644)
	os.WriteFile(filepath.Join(b.Dirs["cpu"], "cpu.stat"), []byte("nr_periods 0\nnr_throttled 0\nthrottled_time 0\n"), 0o644)
	s, err := NewSampler([]*Group{a, b})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, thr, per := make([]time.Duration, 2), make([]uint64, 2), make([]uint64, 2)
	if err := s.Sample(got, thr, per); err != nil || got[0] != 1500*time.Microsecond || got[1] != 42 || thr[0] != 3 || thr[1] != 0 || per[0] != 10 || per[1] != 0 {
		t.Errorf("v1 sample %v %v %v, %v", got, thr, per, err)
	}
	// The counter is read afresh each time (pread at offset 0).
	os.WriteFile(filepath.Join(a.Dirs["cpuacct"], "cpuacct.usage"), []byte("2000000\n"), 0o644)
	s.Sample(got, nil, nil)
	if got[0] != 2*time.Millisecond {
		t.Errorf("second sample %v", got[0])
	}

	// v2: usage_usec from cpu.stat.
	m2, _ := fakeManager(t, "v2-host", "0::/\n", map[string]string{"sys/fs/cgroup/cgroup.controllers": "cpu\n", "sys/fs/cgroup/cgroup.subtree_control": "cpu\n"}, false)
	c, _ := m2.NewGroup("c", Settings{QuotaUsec: -1})
	os.WriteFile(filepath.Join(c.Dirs["cpu"], "cpu.stat"), []byte("usage_usec 777\nuser_usec 700\nsystem_usec 77\nnr_periods 9\nnr_throttled 4\nthrottled_usec 12\n"), 0o644)
	s2, err := NewSampler([]*Group{c})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	var samples []UsageSample
	ctx, cancel := context.WithCancel(context.Background())
	s2.Run(ctx, time.Millisecond, func(u UsageSample) {
		samples = append(samples, u)
		if len(samples) == 3 {
			cancel()
		}
	})
	if len(samples) != 3 || samples[2].Usage[0] != 777*time.Microsecond || samples[2].Throttled[0] != 4 || samples[2].Periods[0] != 9 || samples[2].At < samples[1].At {
		t.Errorf("v2 samples %+v", samples)
	}
}
