package cfs

import (
	"math"
	"math/bits"
)

// MinQuotaUsec is the smallest quota the kubelet sets: 1 ms.
const MinQuotaUsec = 1000

// MilliCPUToQuota turns a CPU limit in millicores into a CFS quota for the
// period (us), as the kubelet does: limit x period, at least MinQuotaUsec;
// -1 (no quota) for no limit. A product too large for an int64 saturates
// instead of wrapping.
func MilliCPUToQuota(milliCPU int64, periodUsec uint64) int64 {
	if milliCPU <= 0 {
		return -1
	}
	hi, lo := bits.Mul64(uint64(milliCPU), periodUsec)
	if hi != 0 || lo/1000 > math.MaxInt64 {
		return math.MaxInt64
	}
	return max(int64(lo/1000), MinQuotaUsec)
}
