package cfs

import (
	"math"
	"time"
)

// Slice is the runtime a CPU takes from its group's pool at a time
// (sched_cfs_bandwidth_slice_us, the kernel's default; the simulator's
// Params.Slice by default).
const Slice = 5 * time.Millisecond

// SliceSlack is the most runtime the CPUs of a group running on cores CPUs
// can hold in their local slices while one of them finds the pool dry:
// (cores-1) slices, and never more than that share of the quota. The fluid
// replay shares the pool perfectly; replaying quota - SliceSlack bounds the
// throttling the kernel's slices can add (an upper bound: held runtime is
// used later or returned, not lost).
func SliceSlack(quota time.Duration, cores float64) time.Duration {
	if cores <= 1 {
		return 0
	}
	c := math.Ceil(cores - 1e-9)
	return min(time.Duration((c-1)*float64(Slice)), time.Duration(float64(quota)*(c-1)/c))
}
