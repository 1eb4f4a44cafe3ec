package cgroup

import (
	"fmt"
	"math"

	"github.com/throttlelab/throttlelab/cfs"
)

// Constants of the kubelet's CPU translation (pkg/kubelet/cm).
const (
	MinShares      = 2
	MaxShares      = 262144
	SharesPerCPU   = 1024
	MinQuotaUsec   = cfs.MinQuotaUsec // the kubelet never sets a quota under 1 ms
	DefaultPeriod  = 100000           // the CFS period Kubernetes uses, in us
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
// kubelet does (cfs.MilliCPUToQuota: the model computes its quotas the same
// way).
func MilliCPUToQuota(milliCPU int64, periodUsec uint64) int64 {
	return cfs.MilliCPUToQuota(milliCPU, periodUsec)
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

// RequestCores reads a Kubernetes CPU request back from a group's cpu.shares
// (v1) or cpu.weight (v2), undoing the kubelet's mapping
// (MilliCPUToShares, then SharesToWeight with mapping m on v2).
// The minimum shares, which BestEffort gets, read as 0. A weight stands for a
// range of shares (the mapping is many to one); the middle of the range is
// returned. ok is false for a weight outside [1, 10000].
func RequestCores(shares, weight uint64, m WeightMapping) (cores float64, ok bool) {
	if weight > 0 {
		lo, hi, ok := WeightToShares(weight, m)
		if !ok {
			return 0, false
		}
		if lo <= MinShares {
			return 0, true
		}
		shares = (lo + hi) / 2
	}
	if shares <= MinShares {
		return 0, shares > 0
	}
	return float64(shares) / SharesPerCPU, true
}

// WeightToShares returns the range of cpu.shares that mapping m turns into
// cpu.weight w, searching SharesToWeight (monotonic) rather than
// inverting its formula, so that the one mapping stays in one place.
func WeightToShares(w uint64, m WeightMapping) (lo, hi uint64, ok bool) {
	f := func(s uint64) uint64 {
		v, err := SharesToWeight(s, m)
		if err != nil {
			return 0
		}
		return v
	}
	if w < 1 || w > MaxWeight || f(MinShares) == 0 {
		return 0, 0, false
	}
	// first returns the smallest shares whose weight is at least x.
	first := func(x uint64) uint64 {
		a, b := uint64(MinShares), uint64(MaxShares)+1
		for a < b {
			mid := (a + b) / 2
			if f(mid) >= x {
				b = mid
			} else {
				a = mid + 1
			}
		}
		return a
	}
	lo, hi = first(w), first(w+1)-1
	if lo > MaxShares || f(lo) != w {
		// No shares map to w exactly (the quadratic mapping skips some):
		// the nearest shares above.
		return lo, lo, lo <= MaxShares
	}
	return lo, min(hi, MaxShares), true
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
