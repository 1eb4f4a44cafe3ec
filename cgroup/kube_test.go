package cgroup

import (
	"math"
	"strings"
	"testing"
)

// The kubelet's table: pkg/kubelet/cm helper tests.
func TestMilliCPUToShares(t *testing.T) {
	for _, tt := range []struct {
		milli int64
		want  uint64
	}{{0, 2}, {1, 2}, {2, 2}, {1000, 1024}, {250, 256}, {100, 102}, {500000, 262144},
		{math.MaxInt64, 262144}, {1e17, 262144}} {
		if got := MilliCPUToShares(tt.milli); got != tt.want {
			t.Errorf("MilliCPUToShares(%d) = %d, want %d", tt.milli, got, tt.want)
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

// TestKubeCPUBounds: amounts the kubelet's formulas cannot take are refused
// with the field named, before any product is formed.
func TestKubeCPUBounds(t *testing.T) {
	for _, tt := range []struct {
		k          KubeCPU
		field, msg string
	}{
		{KubeCPU{LimitMilli: 1e17}, "limit", "more than 4096 CPUs"},
		{KubeCPU{RequestMilli: 1e17}, "request", "more than 4096 CPUs"},
		{KubeCPU{LimitMilli: -1}, "limit", "must not be negative"},
		{KubeCPU{PeriodUsec: 1 << 63}, "period", "cpu period 9223372036854775808 us: the kernel takes 1000 to 1000000"},
		{KubeCPU{PeriodUsec: 999}, "period", "1ms to 1s"},
		{KubeCPU{LimitMilli: 500, BurstUsec: 1 << 63}, "burst", "above the quota"},
		{KubeCPU{Cpus: "0-10000000"}, "cpuset", "CPUs are numbered 0 to 4095"},
	} {
		_, _, err := tt.k.Settings(WeightLinear)
		fe, ok := err.(*FieldError)
		if !ok || fe.Field != tt.field || !strings.Contains(fe.Msg, tt.msg) {
			t.Errorf("%+v: %v, want a %s error with %q", tt.k, err, tt.field, tt.msg)
		}
	}
	s, qos, err := KubeCPU{LimitMilli: 4096000, RequestMilli: 4096000, PeriodUsec: 1000000}.Settings(WeightLinear)
	if err != nil || s.QuotaUsec != 4096000000 || s.Shares != MaxShares || qos != Guaranteed {
		t.Errorf("the largest limit: %+v %s %v", s, qos, err)
	}
}

// TestKubeCPUChanges: where Kubernetes semantics change a value, a warning
// says what takes effect.
func TestKubeCPUChanges(t *testing.T) {
	for _, tt := range []struct {
		k    KubeCPU
		want []string
	}{
		{KubeCPU{LimitMilli: 250}, nil},
		{KubeCPU{}, nil},
		{KubeCPU{LimitMilli: 10}, nil}, // 10m x 100ms = 1000us: exactly the floor
		{KubeCPU{LimitMilli: 1}, []string{"limit: limit 1m with a 100ms period is a quota of 100us, under the kubelet's 1ms floor: it sets 1000us, which is 0.01 CPU",
			"limit: a request of 1m is 1 cpu.shares; the kubelet sets at least 2 (as for 2m)"}},
		{KubeCPU{LimitMilli: 500, PeriodUsec: 1500}, []string{"limit: limit 500m with a 1.5ms period is a quota of 750us, under the kubelet's 1ms floor: it sets 1000us, which is 0.667 CPU"}},
		{KubeCPU{RequestMilli: 1}, []string{"request: a request of 1m is 1 cpu.shares; the kubelet sets at least 2 (as for 2m)"}},
		{KubeCPU{RequestMilli: 300000}, []string{"request: a request of 300 would be 307200 cpu.shares; the kernel stops at 262144 (256 CPUs)"}},
	} {
		var got []string
		for _, w := range tt.k.Changes() {
			got = append(got, w.String())
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%+v: %q\nwant %q", tt.k, got, tt.want)
		}
	}
}

func TestRequestCores(t *testing.T) {
	tests := []struct {
		shares, weight uint64
		m              WeightMapping
		want           float64
		ok             bool
	}{
		{256, 0, "", 0.25, true},
		{2, 0, "", 0, true}, // BestEffort
		{1024, 0, "", 1, true},
		{0, 39, WeightLinear, 1.0048828125, true}, // 1024 shares -> 39; 39 <- 1023..1049
		{0, 100, WeightQuadratic, 1, true},        // 1024 shares -> 100
		{0, 1, WeightLinear, 0, true},
		{0, 10001, WeightLinear, 0, false},
	}
	for _, tt := range tests {
		got, ok := RequestCores(tt.shares, tt.weight, tt.m)
		if ok != tt.ok || (ok && (got < tt.want-0.02 || got > tt.want+0.02)) {
			t.Errorf("RequestCores(%d, %d, %q) = %g, %v; want %g", tt.shares, tt.weight, tt.m, got, ok, tt.want)
		}
	}
	// The round trip through the kubelet's mapping lands within the range
	// one weight stands for, for every request from 10m to 64 cores.
	for _, m := range []WeightMapping{WeightLinear, WeightQuadratic} {
		for milli := int64(10); milli <= 64000; milli = milli*5/4 + 1 {
			w, _ := SharesToWeight(MilliCPUToShares(milli), m)
			lo, hi, ok := WeightToShares(w, m)
			s := MilliCPUToShares(milli)
			if !ok || s < lo || s > hi {
				t.Errorf("%s: %dm -> %d shares -> weight %d -> shares %d..%d", m, milli, s, w, lo, hi)
			}
		}
	}
}
