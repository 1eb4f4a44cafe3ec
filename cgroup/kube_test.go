package cgroup

import "testing"

func TestParseMilliCPU(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"250m", 250, false}, {"0.25", 250, false}, {"2", 2000, false}, {"1.5", 1500, false},
		{".5", 500, false}, {"0", 0, false}, {"0.0001", 1, false}, {"0.2501", 251, false},
		{"0.2500", 250, false}, {"1000m", 1000, false},
		{"", 0, true}, {"-1", 0, true}, {"-250m", 0, true}, {"m", 0, true}, {"1.5m", 0, true},
		{"abc", 0, true}, {"1e3", 0, true}, {"1.-5", 0, true}, {".", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseMilliCPU(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseMilliCPU(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

// The kubelet's table: pkg/kubelet/cm helper tests.
func TestMilliCPUToShares(t *testing.T) {
	for _, tt := range []struct {
		milli int64
		want  uint64
	}{{0, 2}, {1, 2}, {2, 2}, {1000, 1024}, {250, 256}, {100, 102}, {500000, 262144}} {
		if got := MilliCPUToShares(tt.milli); got != tt.want {
			t.Errorf("MilliCPUToShares(%d) = %d, want %d", tt.milli, got, tt.want)
		}
	}
}

func TestMilliCPUToQuota(t *testing.T) {
	for _, tt := range []struct {
		milli  int64
		period uint64
		want   int64
	}{{0, 100000, -1}, {250, 100000, 25000}, {1000, 100000, 100000}, {5, 100000, 1000}, {1, 100000, 1000}, {1500, 50000, 75000}} {
		if got := MilliCPUToQuota(tt.milli, tt.period); got != tt.want {
			t.Errorf("MilliCPUToQuota(%d, %d) = %d, want %d", tt.milli, tt.period, got, tt.want)
		}
	}
}

func TestSharesToWeight(t *testing.T) {
	tests := []struct {
		shares uint64
		m      WeightMapping
		want   uint64
	}{
		{0, WeightLinear, 0}, {2, WeightLinear, 1}, {1024, WeightLinear, 39}, {262144, WeightLinear, 10000},
		{0, WeightQuadratic, 0}, {2, WeightQuadratic, 1}, {262144, WeightQuadratic, 10000},
		// The point of the newer mapping: the default stays the default.
		{1024, WeightQuadratic, 100},
	}
	for _, tt := range tests {
		got, err := SharesToWeight(tt.shares, tt.m)
		if err != nil || got != tt.want {
			t.Errorf("SharesToWeight(%d, %s) = %d, %v; want %d", tt.shares, tt.m, got, err, tt.want)
		}
	}
	// Both mappings are monotonic and stay in range.
	for _, m := range []WeightMapping{WeightLinear, WeightQuadratic} {
		prev := uint64(0)
		for s := uint64(2); s <= MaxShares; s += 97 {
			w, _ := SharesToWeight(s, m)
			if w < prev || w < 1 || w > MaxWeight {
				t.Fatalf("%s: weight(%d) = %d after %d", m, s, w, prev)
			}
			prev = w
		}
	}
	if _, err := SharesToWeight(1024, "cubic"); err == nil {
		t.Error("unknown mapping accepted")
	}
}

func TestQoSOf(t *testing.T) {
	for _, tt := range []struct {
		req, lim int64
		want     QoSClass
	}{{0, 0, BestEffort}, {1000, 1000, Guaranteed}, {0, 1000, Guaranteed}, {500, 1000, Burstable}, {500, 0, Burstable}} {
		if got := QoSOf(tt.req, tt.lim); got != tt.want {
			t.Errorf("QoSOf(%d, %d) = %s, want %s", tt.req, tt.lim, got, tt.want)
		}
	}
}
