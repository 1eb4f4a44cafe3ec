package top

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/throttlelab/throttlelab/cgroup"
)

// Pressure is a cpu.pressure file (PSI, cgroup v2): the share of time some
// (or all) of the group's runnable tasks waited for a CPU.
type Pressure struct {
	// SomeAvg10 is the kernel's 10-second average of "some", in percent.
	SomeAvg10 float64
	// SomeTotalUsec and FullTotalUsec are the cumulative stall times.
	SomeTotalUsec, FullTotalUsec uint64
}

// ParsePressure parses a PSI file:
//
//	some avg10=1.52 avg60=0.40 avg300=0.09 total=3052921
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=0
func ParsePressure(b []byte) (Pressure, error) {
	var p Pressure
	seen := false
	for _, line := range bytes.Split(b, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		some := string(f[0]) == "some"
		if !some && string(f[0]) != "full" {
			continue
		}
		for _, kv := range f[1:] {
			k, v, ok := bytes.Cut(kv, []byte("="))
			if !ok {
				return p, fmt.Errorf("pressure line %q: want key=value fields", line)
			}
			switch string(k) {
			case "avg10":
				if some {
					x, err := strconv.ParseFloat(string(v), 64)
					if err != nil {
						return p, fmt.Errorf("pressure avg10 %q: %w", v, err)
					}
					p.SomeAvg10 = x
				}
			case "total":
				x, err := strconv.ParseUint(string(v), 10, 64)
				if err != nil {
					return p, fmt.Errorf("pressure total %q: %w", v, err)
				}
				if some {
					p.SomeTotalUsec, seen = x, true
				} else {
					p.FullTotalUsec = x
				}
			}
		}
	}
	if !seen {
		return p, fmt.Errorf("pressure file %q has no \"some\" line", b)
	}
	return p, nil
}

// ReadPressure reads dir/cpu.pressure.
func ReadPressure(dir string) (Pressure, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.pressure"))
	if err != nil {
		return Pressure{}, err
	}
	return ParsePressure(b)
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
