package cgroup

import "time"

// Window is the one rolling-window rule for CPU use from cumulative usage
// samples: the use over the window ending at a sample is the usage since the
// newest earlier sample at least Length back, divided by the time between
// them. A window never spans less than its length, so a burst between two
// samples close together is not read as a higher rate; a late sample widens
// the window a little instead (by at most one sampling interval). A run's
// 100 ms and 1 s peaks (record.UsageStatsOf) and PeakTracker's fallback for
// groups without periods (top) both use it.
type Window struct {
	// Length is the window's length.
	Length time.Duration
	pts    []windowPoint
	j      int // the newest point at least Length before the last one
}

type windowPoint struct {
	at    time.Duration
	usage uint64
}

// NewWindow returns a rolling window of the given length.
func NewWindow(length time.Duration) *Window { return &Window{Length: length} }

// Add takes one sample (its time and cumulative usage in ns, in time order)
// and returns the use in cores over the window ending at it; ok is false
// while no earlier sample lies a whole window back.
func (w *Window) Add(at time.Duration, usageNs uint64) (cores float64, ok bool) {
	// Samples older than the one the last window started from can start no
	// later window: drop them once they are half the slice (a copy of less
	// than half, so each sample is copied once on average). A window of 100
	// ms at 10 ms then holds a few dozen samples, not thousands: the agent
	// keeps one per container (BenchmarkAgentDay200).
	if w.j >= 32 && w.j > len(w.pts)/2 {
		w.pts = append(w.pts[:0], w.pts[w.j:]...)
		w.j = 0
	}
	w.pts = append(w.pts, windowPoint{at, usageNs})
	last := len(w.pts) - 1
	for w.j+1 < last && at-w.pts[w.j+1].at >= w.Length {
		w.j++
	}
	if last == 0 || at-w.pts[w.j].at < w.Length {
		return 0, false
	}
	start := w.pts[w.j]
	return float64(usageNs-start.usage) / float64(at-start.at), true
}

// Reset forgets every sample.
func (w *Window) Reset() { w.pts, w.j = w.pts[:0], 0 }
