package record

import (
	"slices"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
)

// columns are a run's samples by group: at[j] is sample j's time, usage[i],
// thr[i] and periods[i] group i's cumulative CPU time, throttled periods
// and periods at each sample. Held hands them over as they are, and no
// sample holds slices of its own: a run of 58 k samples of 9 groups was
// 58 k structs of three slices each, copied as the slice of them grew,
// scanned by every collection, and copied again into columns for the
// report.
type columns struct {
	at      []time.Duration
	usage   [][]time.Duration
	thr     [][]uint64
	periods [][]uint64 // nil for a group some sample gave no nr_periods
	// noPeriods[i] is set once a sample gave no nr_periods for group i.
	noPeriods []bool
}

// add appends one sample. The groups are the first sample's; a later
// sample's missing throttled counts read as 0.
func (c *columns) add(s cgroup.UsageSample) {
	if len(c.at) == 0 && len(c.usage) == 0 {
		n := len(s.Usage)
		c.usage, c.thr, c.periods, c.noPeriods = make([][]time.Duration, n), make([][]uint64, n), make([][]uint64, n), make([]bool, n)
	}
	grow := len(c.at) == cap(c.at)
	c.at = appendDoubling(c.at, s.At, grow)
	for i := range c.usage {
		var u time.Duration
		var t uint64
		if i < len(s.Usage) {
			u = s.Usage[i]
		}
		if i < len(s.Throttled) {
			t = s.Throttled[i]
		}
		c.usage[i] = appendDoubling(c.usage[i], u, grow)
		c.thr[i] = appendDoubling(c.thr[i], t, grow)
		switch {
		case c.noPeriods[i]:
		case i >= len(s.Periods):
			c.noPeriods[i], c.periods[i] = true, nil
		default:
			c.periods[i] = appendDoubling(c.periods[i], s.Periods[i], grow)
		}
	}
}

// appendDoubling appends v to xs, doubling its capacity first when grow
// is set (at the times' capacity, so every column grows at once): append
// grows a long slice by a quarter, and a run's columns were copied about
// five times over.
func appendDoubling[T any](xs []T, v T, grow bool) []T {
	if grow || len(xs) == cap(xs) {
		xs = slices.Grow(xs, max(len(xs), 1024))
	}
	return append(xs, v)
}

// column is group i's cumulative CPU time at each sample.
func (c *columns) column(i int) []time.Duration {
	if i >= len(c.usage) {
		return make([]time.Duration, len(c.at))
	}
	return c.usage[i]
}

// throttled is group i's cumulative throttled periods at each sample.
func (c *columns) throttled(i int) []uint64 {
	if i >= len(c.thr) {
		return make([]uint64, len(c.at))
	}
	return c.thr[i]
}

// samples are the samples as structs again (Missed is not kept).
func (c *columns) samples() []cgroup.UsageSample {
	out := make([]cgroup.UsageSample, len(c.at))
	for j, t := range c.at {
		s := cgroup.UsageSample{At: t, Usage: make([]time.Duration, len(c.usage)), Throttled: make([]uint64, len(c.usage))}
		for i := range c.usage {
			s.Usage[i], s.Throttled[i] = c.usage[i][j], c.thr[i][j]
		}
		if !slices.Contains(c.noPeriods, true) {
			s.Periods = make([]uint64, len(c.usage))
			for i := range c.usage {
				s.Periods[i] = c.periods[i][j]
			}
		}
		out[j] = s
	}
	return out
}
