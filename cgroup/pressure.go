package cgroup

import (
	"bytes"
	"fmt"
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
