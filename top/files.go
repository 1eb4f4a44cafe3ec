package top

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/throttlelab/throttlelab/cgroup"
)

// Pressure is a cpu.pressure file (PSI, cgroup v2), as package cgroup
// parses it.
type Pressure = cgroup.Pressure

// ReadPressure reads dir/cpu.pressure.
func ReadPressure(dir string) (Pressure, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.pressure"))
	if err != nil {
		return Pressure{}, err
	}
	return cgroup.ParsePressure(b)
}

// CountProcs counts the processes in dir/cgroup.procs.
func CountProcs(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return 0, err
	}
	return bytes.Count(b, []byte("\n")), nil
}

// RequestCores reads a Kubernetes CPU request back from a group's cpu.shares
// (v1) or cpu.weight (v2), undoing the kubelet's mapping
// (cgroup.MilliCPUToShares, then cgroup.SharesToWeight with mapping m on v2).
// The minimum shares, which BestEffort gets, read as 0. A weight stands for a
// range of shares (the mapping is many to one); the middle of the range is
// returned. ok is false for a weight outside [1, 10000].
func RequestCores(shares, weight uint64, m cgroup.WeightMapping) (cores float64, ok bool) {
	if weight > 0 {
		lo, hi, ok := WeightToShares(weight, m)
		if !ok {
			return 0, false
		}
		if lo <= cgroup.MinShares {
			return 0, true
		}
		shares = (lo + hi) / 2
	}
	if shares <= cgroup.MinShares {
		return 0, shares > 0
	}
	return float64(shares) / cgroup.SharesPerCPU, true
}

// WeightToShares returns the range of cpu.shares that mapping m turns into
// cpu.weight w, searching cgroup.SharesToWeight (monotonic) rather than
// inverting its formula, so that the one mapping stays in one place.
func WeightToShares(w uint64, m cgroup.WeightMapping) (lo, hi uint64, ok bool) {
	f := func(s uint64) uint64 {
		v, err := cgroup.SharesToWeight(s, m)
		if err != nil {
			return 0
		}
		return v
	}
	if w < 1 || w > cgroup.MaxWeight || f(cgroup.MinShares) == 0 {
		return 0, 0, false
	}
	// first returns the smallest shares whose weight is at least x.
	first := func(x uint64) uint64 {
		a, b := uint64(cgroup.MinShares), uint64(cgroup.MaxShares)+1
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
	if lo > cgroup.MaxShares || f(lo) != w {
		// No shares map to w exactly (the quadratic mapping skips some):
		// the nearest shares above.
		return lo, lo, lo <= cgroup.MaxShares
	}
	return lo, min(hi, cgroup.MaxShares), true
}
