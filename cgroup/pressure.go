package cgroup

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
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

// StallSplit is a group's CPU stall over an interval (cpu.pressure "some")
// told apart by cause: the time its quota held it back, and the time it
// waited for a CPU while not throttled. QuotaSeconds + ContentionSeconds is
// the interval's "some" time.
type StallSplit struct {
	QuotaSeconds, ContentionSeconds float64
}

// SplitStall splits a group's "some" stall time over an interval of wall
// seconds into quota and contention, from the interval's deltas: someSec of
// cpu.pressure "some", throttledSec of cpu.stat's throttled time, usageSec
// of CPU use; cpus is the number of CPUs the group can run on (at least 1).
//
// The rule rests on what the kernels measured in docs/top.md do: a
// throttled task stays runnable for PSI, so throttled time is part of
// "some", and the rest of "some" is waiting for a CPU. But the two count
// differently: throttled time is summed over the CPUs whose run queues were
// throttled, while PSI averages each CPU's stall weighted by the time the
// group was busy there. So throttled time is divided by k, the number of
// CPUs the group kept busy: k = usage / (wall - some), which holds for a
// group runnable throughout the interval (on each of its CPUs, running +
// stalled = wall), rounded to whole CPUs (on two CPUs PSI's "some" fell a
// few per cent short of that sum, which a fraction of k magnifies), between
// 1 and cpus. A group that also slept gets a smaller k, so the quota share
// is then too large and contention too small. The quota share never
// exceeds "some".
func SplitStall(someSec, throttledSec, usageSec, wallSec float64, cpus int) StallSplit {
	if someSec <= 0 || wallSec <= 0 {
		return StallSplit{}
	}
	k := 1.0 // a group stalled throughout never ran: nothing tells its CPUs
	if ran := wallSec - someSec; ran > 0 {
		k = min(max(math.Round(usageSec/ran), 1), float64(max(cpus, 1)))
	}
	quota := min(max(throttledSec, 0)/k, someSec)
	return StallSplit{QuotaSeconds: quota, ContentionSeconds: someSec - quota}
}
