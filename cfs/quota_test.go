package cfs

import (
	"math"
	"testing"
)

func TestMilliCPUToQuota(t *testing.T) {
	for _, tt := range []struct {
		milli  int64
		period uint64
		want   int64
	}{{0, 100000, -1}, {250, 100000, 25000}, {1000, 100000, 100000}, {5, 100000, 1000}, {1, 100000, 1000}, {1500, 50000, 75000},
		// Products beyond an int64 saturate instead of wrapping.
		{math.MaxInt64, 1000000, math.MaxInt64}, {1e17, 100000, math.MaxInt64}} {
		if got := MilliCPUToQuota(tt.milli, tt.period); got != tt.want {
			t.Errorf("MilliCPUToQuota(%d, %d) = %d, want %d", tt.milli, tt.period, got, tt.want)
		}
	}
}
