package cgroup

import "time"

// PeakPoint is one sample of a group's cumulative counters.
type PeakPoint struct {
	// At is the sample's time, from any fixed origin.
	At time.Duration
	// UsageNs is the cumulative CPU usage, Periods and Throttled the
	// cumulative nr_periods and nr_throttled of cpu.stat.
	UsageNs, Periods, Throttled uint64
	// Stale says Periods and Throttled were not read at this sample but
	// carried from an earlier one (a reader that reads cpu.stat only when
	// nr_throttled can have moved): no period boundary is placed next to
	// it, and the interval's peak is over sliding windows.
	Stale bool
	// Coarse says the slot that ends at this sample is as long as a
	// period, or about (a group read on a coarse grid: the agent's cold
	// containers, every 100 ms): a boundary in it is known only to within
	// a period, so none is placed there, and the interval's peak is over
	// sliding windows, as with Stale. Without it, boundaries at the middle
	// of such slots give estimates that are means of two slots: below
	// both the period's true peak and the highest slot's mean.
	Coarse bool
}

// PeakTracker finds the highest CPU use within one of a group's own CFS
// periods (top's peak and the runs' peak_period_cores), from samples of its
// cumulative usage and nr_periods taken every few milliseconds.
//
// The kernel's period timer adds to nr_periods when a period ends, so a
// period boundary lies in the sample slot where nr_periods moves. Where in
// that slot is unknown; the tracker marks it at the slot's middle in time,
// with half of the slot's usage done. Between two marks, the usage divided by
// the time is one period's use (or the mean of several, when nr_periods moved
// by more). That is exact for steady use; samples that drift against the
// period err by at most a quarter of a slot's usage each side. A boundary
// where nr_throttled moved too, after a slot without usage, is known exactly:
// the group was throttled through the end of the period, so the whole slot's
// usage belongs to the new one; between two such marks the use of a
// throttled group is exact whatever the samples' timing.
//
// Every estimate is then kept within what the samples allow whatever the
// split: at least the usage between the two boundary slots, at most the usage
// including both, over the periods counted. With the group's limit known
// (SetLimit), an estimate above (quota + burst) / period is brought down to
// it unless the usage that surely fell within the periods exceeds it: above
// the limit the estimate is what the samples prove, not what a split of the
// boundary slots could explain. The kernel does let a period hold more than
// its quota (each CPU keeps what is left of its 5 ms runtime slice across the
// boundary, and usage is accounted at scheduler ticks), so a real group's
// peak can read above its limit. TestPeakPeriodReal checks the estimate
// against 1 ms samples of a real group; docs/methodology.md ("The peak within
// a period") holds the measured figures.
//
// Where the marks are further apart than the periods between them allow, the
// timer stopped (an idle group) and restarted, and the usage is divided by
// the periods counted instead. Successive estimates are a weighted mean of the
// use between the first and last mark, so the highest is at least the mean.
//
// Groups without a quota have no periods (nr_periods stays still); for them,
// and for limited groups whose timer did not run, the tracker reports the
// highest use over sliding windows of a fixed length instead (Window's
// rule), and says so.
type PeakTracker struct {
	period time.Duration // the CFS period; 0 without a quota
	window time.Duration // sliding window length for the fallback
	win    Window

	prev     PeakPoint
	havePrev bool

	mark      float64       // usage (ns) at the last period boundary found
	markAt    time.Duration // its time (the middle of its slot)
	markSlot  time.Duration // the length of its slot
	markN     uint64        // nr_periods there
	markExact bool          // the group was throttled at the boundary
	// markLo and markHi are the usage (ns) at the samples either side of the
	// boundary: what surely came before it, and what at most did.
	markLo, markHi uint64
	haveMark       bool
	// limit is the most the group can use in one period, in cores
	// ((quota + burst) / period); 0 when unknown.
	limit    float64
	idleSlot bool // no usage in the slot before the last sample

	// Within the current interval:
	periodPeak float64 // cores
	periodsN   int     // period estimates made
	windowPeak float64
	windowsN   int
	staleN     int // stale or coarse points taken
}

// NewPeakTracker returns a tracker for a group with the given CFS period (0
// without a quota) and the sliding window of its fallback.
func NewPeakTracker(period, window time.Duration) *PeakTracker {
	return &PeakTracker{period: period, window: window, win: Window{Length: window}}
}

// SetPeriod changes the period (a group's cpu.max or cfs_period_us changed,
// or a quota appeared or went), forgetting the last boundary: it was on the
// old timer.
func (p *PeakTracker) SetPeriod(period, window time.Duration) {
	if period != p.period || window != p.window {
		p.period, p.window, p.haveMark = period, window, false
		p.win.Length = window
	}
}

// SetLimit tells the tracker the most the group can use within one period,
// in cores: (quota + burst) / period, the bandwidth controller's guarantee
// (0: unknown). The usage in a sample slot that holds a boundary could belong
// to either period; where the samples allow a split that keeps a period
// within the limit, the estimate takes it (see PeakTracker).
func (p *PeakTracker) SetLimit(cores float64) { p.limit = cores }

// Reset forgets every sample: the counters went backwards, so the group was
// removed and made again under the same path.
func (p *PeakTracker) Reset() {
	p.havePrev, p.haveMark = false, false
	p.win.Reset()
}

// Add takes one sample, in time order.
func (p *PeakTracker) Add(s PeakPoint) {
	if p.havePrev && (s.UsageNs < p.prev.UsageNs || s.Periods < p.prev.Periods || s.At <= p.prev.At) {
		p.Reset()
	}
	if s.Stale || s.Coarse {
		p.haveMark = false // the boundaries since the last read are not known (or only to a period)
		p.staleN++
	}
	if p.havePrev && p.period > 0 && !s.Stale && !s.Coarse && !p.prev.Stale && s.Periods > p.prev.Periods {
		mid := (float64(p.prev.UsageNs) + float64(s.UsageNs)) / 2
		exact := s.Throttled > p.prev.Throttled && p.idleSlot
		if exact {
			mid = float64(p.prev.UsageNs)
		}
		at, slot := (p.prev.At+s.At)/2, s.At-p.prev.At
		if p.haveMark {
			n := time.Duration(s.Periods - p.markN)
			d := at - p.markAt
			if exact && p.markExact || d > n*p.period+(slot+p.markSlot)/2 {
				// Both boundaries exact (the timer ran throughout), or the
				// timer stopped in between: the periods counted are the time.
				d = n * p.period
			}
			cores := (mid - p.mark) / float64(d)
			// What the samples allow, whatever the split of the two boundary
			// slots: at least the usage between them, at most the usage
			// including both, over the periods counted.
			span := float64(n * p.period)
			lo, hi := float64(p.prev.UsageNs-p.markHi)/span, float64(s.UsageNs-p.markLo)/span
			if p.prev.UsageNs < p.markHi { // both boundaries in one slot
				lo = 0
			}
			cores = min(max(cores, lo), hi)
			if p.limit > 0 && cores > p.limit {
				cores = max(p.limit, lo)
			}
			if p.periodsN == 0 || cores > p.periodPeak {
				p.periodPeak = cores
			}
			p.periodsN++
		}
		p.mark, p.markAt, p.markSlot, p.markN, p.markExact, p.haveMark = mid, at, slot, s.Periods, exact, true
		p.markLo, p.markHi = p.prev.UsageNs, s.UsageNs
	}
	p.idleSlot = p.havePrev && s.UsageNs == p.prev.UsageNs
	if cores, ok := p.win.Add(s.At, s.UsageNs); ok {
		if p.windowsN == 0 || cores > p.windowPeak {
			p.windowPeak = cores
		}
		p.windowsN++
	}
	p.prev, p.havePrev = s, true
}

// Peak bases: how a peak was found.
const (
	// BasisPeriod: between the group's own period boundaries.
	BasisPeriod = "period"
	// BasisWindow: over sliding windows (100 ms for a group without a quota,
	// its period for a limited group whose period timer did not run, or
	// whose samples carried cpu.stat or came a period or so apart:
	// PeakPoint.Stale, Coarse).
	BasisWindow = "window"
)

// Take returns the interval's peak and how it was found, and starts a new
// interval; ok is false when there were too few samples for any estimate.
// An interval with stale or coarse points (PeakPoint.Stale, Coarse) has
// its peak over sliding windows: its period estimates leave out the
// periods not read, or read only a period or so apart.
func (p *PeakTracker) Take() (cores float64, basis string, window time.Duration, ok bool) {
	switch {
	case p.periodsN > 0 && (p.staleN == 0 || p.windowsN == 0):
		cores, basis, window, ok = p.periodPeak, BasisPeriod, p.period, true
	case p.windowsN > 0:
		cores, basis, window, ok = p.windowPeak, BasisWindow, p.window, true
	}
	p.periodPeak, p.periodsN, p.windowPeak, p.windowsN, p.staleN = 0, 0, 0, 0, 0
	return cores, basis, window, ok
}
