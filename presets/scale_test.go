package presets

import (
	"errors"
	"testing"

	"github.com/throttlelab/throttlelab/experiment"
)

// TestMachineRule holds the one scaling rule on fake CPU counts: shares of
// the original machine stay shares of this one, counts scale in proportion
// with their floor, and a preset's faithful floor refuses smaller machines.
func TestMachineRule(t *testing.T) {
	for _, c := range []struct {
		cores           int
		share4, count20 int64
	}{
		{1, 250, 2},
		{2, 500, 3},
		{4, 1000, 5},
		{16, 4000, 20},
	} {
		m := Machine{Cores: c.cores, From: 16}
		if got := m.Share(4).Milli; got != c.share4 {
			t.Errorf("%d cores: 4 of 16 cores is %dm, want %dm", c.cores, got, c.share4)
		}
		if got := int64(m.Count(20, 2)); got != c.count20 {
			t.Errorf("%d cores: 20 workers of 16 cores scale to %d, want %d", c.cores, got, c.count20)
		}
	}
	for _, c := range []struct {
		cores   int
		refused bool
	}{{1, true}, {2, false}, {4, false}, {16, false}} {
		q, how, err := f14Pinning.Quick(c.cores)
		if c.refused {
			if !errors.Is(err, ErrNotFaithful) {
				t.Errorf("f14 on %d CPU: %v, want refused as not faithful", c.cores, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("f14 on %d CPUs: %v", c.cores, err)
		}
		p, err := config(q, "pinned")
		if err != nil {
			t.Fatal(err)
		}
		// The pinned cores are half the machine, and never all of it.
		n := c.cores / 2
		if want := experiment.CPURange(c.cores-n, c.cores-1).String(); p.CPU.Cpuset.String() != want || p.CPU.Request.Milli != int64(n*1000) {
			t.Errorf("f14 on %d CPUs: pinned to %s with %s, want %s with %d CPUs (%s)", c.cores, p.CPU.Cpuset, p.CPU.Request, want, n, how)
		}
	}
	// F2 by the same rule: 1, 2 and 4 CPUs x 8 pods of 16 cores are a
	// half, the whole and twice the machine, split between its 2 pods.
	for _, c := range []struct {
		cores int
		limit [3]int64
	}{{1, [3]int64{250, 500, 1000}}, {2, [3]int64{500, 1000, 2000}}, {4, [3]int64{1000, 2000, 4000}}, {16, [3]int64{4000, 8000, 16000}}} {
		q, how, err := f02LimitSize.Quick(c.cores)
		if err != nil {
			t.Fatalf("f02 on %d CPUs: %v", c.cores, err)
		}
		for i, name := range []string{"limit-1", "limit-2", "limit-4"} {
			cfg, err := config(q, name)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.CPU.Limit.Milli != c.limit[i] || cfg.Instances != 2 {
				t.Errorf("f02 on %d CPUs: %s is %d pods at %s, want 2 at %dm (%s)", c.cores, name, cfg.Instances, cfg.CPU.Limit, c.limit[i], how)
			}
		}
	}
}
