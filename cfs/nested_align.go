package cfs

import (
	"errors"
	"sort"
	"time"
)

// AlignStep is the shortest interval AlignDemands keeps between two times:
// times of different containers closer than this are one.
const AlignStep = time.Millisecond

// AlignDemands puts the containers' demands ds on one time axis, for
// ReplayNested or their sum: origins[i] is the clock time of ds[i]'s first
// sample (its At count from there), so the demands must share a clock
// (demands that all start at 0 are aligned at their starts). Over the span
// every container covers, the axis is the union of the containers' sample
// times (a time within AlignStep of the one before it is left out), and
// each container's cumulative use at a time between two of its samples is
// interpolated linearly: its work in a sample interval is spread evenly over
// the interval, as the replay assumes within an interval, and every
// container's work over the span is counted exactly. Each result keeps its
// container's parallelism bound and Arrivals; per-CPU splits are not carried
// over. Demands with gaps left out (Excluded) cannot be aligned: their
// times no longer follow the clock.
func AlignDemands(ds []*Demand, origins []time.Duration) ([]*Demand, error) {
	if len(ds) == 0 || len(origins) != len(ds) {
		return nil, errors.New("no container to align, or not one origin per container")
	}
	lo, hi := time.Duration(-1<<63), time.Duration(1<<63-1)
	for i, d := range ds {
		if d.Excluded > 0 {
			return nil, errors.New("samples left out (gaps or a restarted counter): aligning containers needs their samples whole; record a span without gaps")
		}
		lo = max(lo, origins[i]+d.At[0])
		hi = min(hi, origins[i]+d.At[len(d.At)-1])
	}
	if hi <= lo {
		return nil, errors.New("the containers' samples do not overlap in time (time_ns as written): record them over the same span, on one clock")
	}
	var grid []time.Duration
	for i, d := range ds {
		for _, t := range d.At {
			if t += origins[i]; t >= lo && t <= hi {
				grid = append(grid, t)
			}
		}
	}
	sort.Slice(grid, func(i, j int) bool { return grid[i] < grid[j] })
	kept := grid[:1]
	for _, t := range grid[1:] {
		if t-kept[len(kept)-1] >= AlignStep {
			kept = append(kept, t)
		}
	}
	if kept[len(kept)-1] != hi { // the span's end, where the last interval closes
		kept[len(kept)-1] = hi
	}
	at := make([]time.Duration, len(kept))
	for i, t := range kept {
		at[i] = t - kept[0]
	}
	out := make([]*Demand, len(ds))
	for j, d := range ds {
		usage := make([]time.Duration, len(kept))
		k := 0 // the sample at or before t
		for i, t := range kept {
			t -= origins[j]
			for k+1 < len(d.At) && d.At[k+1] <= t {
				k++
			}
			u := d.UsageAt(k)
			if k+1 < len(d.At) && t > d.At[k] {
				du, dt := d.UsageAt(k+1)-d.UsageAt(k), d.At[k+1]-d.At[k]
				u += time.Duration(float64(du) * float64(t-d.At[k]) / float64(dt))
			}
			usage[i] = u
		}
		out[j] = &Demand{At: at, Usage: usage, Cores: int(d.Bound()), Arrivals: d.Arrivals, Warnings: d.Warnings}
	}
	return out, nil
}
