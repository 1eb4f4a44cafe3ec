package cgroup

import (
	"fmt"
	"math"
	"math/bits"
)

// Constants of the kubelet's CPU translation (pkg/kubelet/cm).
const (
	MinShares      = 2
	MaxShares      = 262144
	SharesPerCPU   = 1024
	MinQuotaUsec   = 1000   // the kubelet never sets a quota under 1 ms
	DefaultPeriod  = 100000 // the CFS period Kubernetes uses, in us
	MaxWeight      = 10000
	DefaultWeight  = 100
	milliCPUPerCPU = 1000
)

// MilliCPUToShares turns a CPU request into cpu.shares as the kubelet does: 1024
// per CPU, at least MinShares (also for no request: BestEffort), at most MaxShares.
func MilliCPUToShares(milliCPU int64) uint64 {
	if milliCPU <= 0 {
		return MinShares
	}
	if milliCPU > MaxShares*milliCPUPerCPU/SharesPerCPU+1 {
		return MaxShares // and no overflow below
	}
	shares := milliCPU * SharesPerCPU / milliCPUPerCPU
	return uint64(min(max(shares, MinShares), MaxShares))
}

// MilliCPUToQuota turns a CPU limit into a CFS quota for the period, as the
// kubelet does: limit x period, at least MinQuotaUsec; -1 (no quota) for no limit.
// A product too large for an int64 saturates instead of wrapping.
func MilliCPUToQuota(milliCPU int64, periodUsec uint64) int64 {
	if milliCPU <= 0 {
		return -1
	}
	hi, lo := bits.Mul64(uint64(milliCPU), periodUsec)
	if hi != 0 || lo/milliCPUPerCPU > math.MaxInt64 {
		return math.MaxInt64
	}
	return max(int64(lo/milliCPUPerCPU), MinQuotaUsec)
}

// WeightMapping selects how cgroup v1 shares become a v2 cpu.weight.
type WeightMapping string

const (
	// WeightLinear is the classic runc/crun mapping, linear from [2, 262144] to
	// [1, 10000]: the default 1024 shares become weight 39, not 100.
	WeightLinear WeightMapping = "linear"
	// WeightQuadratic is the mapping of newer runc and crun (runc PR 4785, after
	// kubernetes issue 131216): a quadratic in log2(shares) through the minimum,
	// the maximum and 1024 -> 100.
	WeightQuadratic WeightMapping = "quadratic"
)

// SharesToWeight converts cpu.shares to cpu.weight with the given mapping.
func SharesToWeight(shares uint64, m WeightMapping) (uint64, error) {
	if shares == 0 {
		return 0, nil
	}
	switch m {
	case WeightLinear, "":
		shares = min(max(shares, MinShares), MaxShares)
		return 1 + (shares-2)*9999/262142, nil
	case WeightQuadratic:
		if shares <= MinShares {
			return 1, nil
		}
		if shares >= MaxShares {
			return MaxWeight, nil
		}
		l := math.Log2(float64(shares))
		exponent := (l*l+125*l)/612.0 - 7.0/34.0
		return uint64(math.Ceil(math.Pow(10, exponent))), nil
	}
	return 0, fmt.Errorf("weight mapping %q: want linear or quadratic", m)
}

// QoSClass is a Kubernetes quality-of-service class.
type QoSClass string

// QoS classes.
const (
	Guaranteed QoSClass = "Guaranteed"
	Burstable  QoSClass = "Burstable"
	BestEffort QoSClass = "BestEffort"
)

// QoSOf returns the class a container with this CPU request and limit (in
// millicores, 0 for unset) gets, counting CPU only: Guaranteed when the limit is
// set and the request equals it (an unset request defaults to the limit),
// BestEffort when neither is set, Burstable otherwise.
func QoSOf(requestMilli, limitMilli int64) QoSClass {
	switch {
	case requestMilli == 0 && limitMilli == 0:
		return BestEffort
	case limitMilli > 0 && (requestMilli == 0 || requestMilli == limitMilli):
		return Guaranteed
	}
	return Burstable
}
