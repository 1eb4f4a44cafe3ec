package cgroup

import (
	"math"
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	ms := time.Millisecond
	// One core busy from 0 to 50 ms, then idle; samples every 10 ms, and
	// one late sample 5 ms after the 100 ms one.
	w := NewWindow(100 * ms)
	var got []float64
	for _, at := range []time.Duration{0, 10 * ms, 20 * ms, 30 * ms, 40 * ms, 50 * ms, 60 * ms, 70 * ms, 80 * ms, 90 * ms, 100 * ms, 105 * ms, 150 * ms, 200 * ms} {
		used := min(at, 50*ms)
		if cores, ok := w.Add(at, uint64(used)); ok {
			got = append(got, cores)
		} else if at >= 100*ms {
			t.Errorf("no window ending at %v", at)
		}
	}
	// 100 ms: 50/100; 105 ms: from 0 still (the newest sample at least
	// 100 ms back), 50/105 and never 50/95; 150 ms: from 50 ms, 0; 200 ms: 0.
	want := []float64{0.5, 50.0 / 105, 0, 0}
	if len(got) != len(want) {
		t.Fatalf("windows %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("window %d: %.4f cores, want %.4f", i, got[i], want[i])
		}
	}
	w.Reset()
	if _, ok := w.Add(300*ms, 0); ok {
		t.Error("a window right after Reset")
	}
}
