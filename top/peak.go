package top

import "time"

// point is one sample of a group's cumulative counters.
type point struct {
	at        time.Duration // since the watcher started
	usageNs   uint64
	periods   uint64 // nr_periods
	throttled uint64 // nr_throttled
}

// ringSize bounds the samples kept for sliding windows: a 1 s window (the
// longest CFS period) at one sample every 10 ms, with room to spare.
const ringSize = 128

// peakTracker finds the highest CPU use within one of a group's own CFS
// periods, from samples of its cumulative usage and nr_periods taken every
// few milliseconds.
//
// The kernel's period timer adds to nr_periods when a period ends, so a
// period boundary lies in the sample slot where nr_periods moves. Where in
// that slot is unknown; the tracker marks it at the slot's middle in time,
// with half of the slot's usage done. Between two marks, the usage divided by
// the time is one period's use (or the mean of several, when nr_periods moved
// by more). That is exact for steady use, and for a group that spends its
// quota early in each period and is throttled when samples keep in step with
// the period; samples that drift against it err by at most a quarter of a
// slot's usage each side (0.025 cores at 10 ms samples in 100 ms periods).
// A boundary where nr_throttled moved too, after a slot without usage, is
// known exactly: the group was throttled through the end of the period, so
// the whole slot's usage belongs to the new one; between two such marks the
// use of a throttled group is exact whatever the samples' timing.
// Where the marks are further apart than the periods between them allow, the
// timer stopped (an idle group) and restarted, and the usage is divided by
// the periods counted instead. Successive estimates are a weighted mean of the
// use between the first and last mark, so the highest is at least the mean.
//
// Groups without a quota have no periods (nr_periods stays still); for them,
// and for limited groups whose timer did not run, the tracker reports the
// highest use over sliding windows of a fixed length instead, and says so.
type peakTracker struct {
	period time.Duration // the CFS period; 0 without a quota
	window time.Duration // sliding window length for the fallback

	prev     point
	havePrev bool

	mark      float64       // usage (ns) at the last period boundary found
	markAt    time.Duration // its time (the middle of its slot)
	markSlot  time.Duration // the length of its slot
	markN     uint64        // nr_periods there
	markExact bool          // the group was throttled at the boundary
	haveMark  bool
	idleSlot  bool // no usage in the slot before the last sample

	// Within the current interval:
	periodPeak float64 // cores
	periodsN   int     // period estimates made
	windowPeak float64
	windowsN   int

	ring [ringSize]point
	head int // next slot to write
	n    int // points in the ring
}

func newPeakTracker(period, window time.Duration) *peakTracker {
	return &peakTracker{period: period, window: window}
}

// setPeriod changes the period (a group's cpu.max or cfs_period_us changed,
// or a quota appeared or went), forgetting the last boundary: it was on the
// old timer.
func (p *peakTracker) setPeriod(period, window time.Duration) {
	if period != p.period || window != p.window {
		p.period, p.window, p.haveMark = period, window, false
	}
}

// reset forgets every sample: the counters went backwards, so the group was
// removed and made again under the same path.
func (p *peakTracker) reset() {
	p.havePrev, p.haveMark, p.n, p.head = false, false, 0, 0
}

// add takes one sample, in time order.
func (p *peakTracker) add(s point) {
	if p.havePrev && (s.usageNs < p.prev.usageNs || s.periods < p.prev.periods || s.at <= p.prev.at) {
		p.reset()
	}
	if p.havePrev && p.period > 0 && s.periods > p.prev.periods {
		mid := (float64(p.prev.usageNs) + float64(s.usageNs)) / 2
		exact := s.throttled > p.prev.throttled && p.idleSlot
		if exact {
			mid = float64(p.prev.usageNs)
		}
		at, slot := (p.prev.at+s.at)/2, s.at-p.prev.at
		if p.haveMark {
			n := time.Duration(s.periods - p.markN)
			d := at - p.markAt
			if exact && p.markExact || d > n*p.period+(slot+p.markSlot)/2 {
				// Both boundaries exact (the timer ran throughout), or the
				// timer stopped in between: the periods counted are the time.
				d = n * p.period
			}
			cores := (mid - p.mark) / float64(d)
			if p.periodsN == 0 || cores > p.periodPeak {
				p.periodPeak = cores
			}
			p.periodsN++
		}
		p.mark, p.markAt, p.markSlot, p.markN, p.markExact, p.haveMark = mid, at, slot, s.periods, exact, true
	}
	p.idleSlot = p.havePrev && s.usageNs == p.prev.usageNs
	// The newest earlier sample at least one window back.
	for i := 1; i <= p.n; i++ {
		old := p.ring[(p.head-i+ringSize)%ringSize]
		if d := s.at - old.at; d >= p.window {
			cores := float64(s.usageNs-old.usageNs) / float64(d)
			if p.windowsN == 0 || cores > p.windowPeak {
				p.windowPeak = cores
			}
			p.windowsN++
			break
		}
	}
	p.ring[p.head] = s
	p.head = (p.head + 1) % ringSize
	p.n = min(p.n+1, ringSize)
	p.prev, p.havePrev = s, true
}

// Peak bases: how a peak was found.
const (
	// BasisPeriod: between the group's own period boundaries.
	BasisPeriod = "period"
	// BasisWindow: over sliding windows (100 ms for a group without a quota,
	// its period for a limited group whose period timer did not run).
	BasisWindow = "window"
)

// take returns the interval's peak and how it was found, and starts a new
// interval; ok is false when there were too few samples for any estimate.
func (p *peakTracker) take() (cores float64, basis string, window time.Duration, ok bool) {
	switch {
	case p.periodsN > 0:
		cores, basis, window, ok = p.periodPeak, BasisPeriod, p.period, true
	case p.windowsN > 0:
		cores, basis, window, ok = p.windowPeak, BasisWindow, p.window, true
	}
	p.periodPeak, p.periodsN, p.windowPeak, p.windowsN = 0, 0, 0, 0
	return cores, basis, window, ok
}
