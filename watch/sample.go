package watch

import (
	"slices"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
)

// Sample reads every group's usage and cpu.stat once (those the Policy picks:
// at the coarse grid's instants, and hot ones at every instant; see
// ByNeed.Coarse); at is the time since the watcher started, in order.
//
// With ByNeed.Coarse, at a grid instant the gates (the usage of the lowest group
// that holds every group the Policy picks under each top-level group) are read
// first: a cold group whose
// gate reading at its last read is the same as now used no CPU since
// (usage is charged to every ancestor at once, and never goes down), so
// its reading is carried to this instant instead of read again, where the
// reading would have been its usage alone (its cpu.stat is not due:
// group.read). A node whose containers are all idle is read once per grid
// instant; where one of them ran, every group is read as without the gate
// (one read more per grid instant).
func (w *Watcher) Sample(at time.Duration) {
	w.lastAt = at
	w.taken.Add(1)
	if w.events.changed(w.settingsWritten) { // before the reads: a write before this instant counts at it
		w.rediscover = true
	}
	grid := !w.opts.ByNeed.Coarse || w.opts.ByNeed.Policy.OnGrid(at)
	for _, gt := range w.gates {
		gt.ok = false
		if grid {
			if r, err := gt.counter.Read(false); err == nil && r.HasUsageNs {
				gt.usage, gt.ok = r.UsageNs, true
			}
		}
	}
	hot := false
	// Off the grid only hot groups are read: their list, once one full
	// pass since the last Discover has read every new group.
	list, full := w.hotList, grid || !w.hotListOK
	if full {
		list, w.hotList = w.sorted, w.hotList[:0]
	}
	for _, g := range list {
		if g.samples == 0 || (g.every && (grid || g.hot)) {
			gt := g.gate
			if gt != nil && gt.ok && g.gated && g.gateUsage == gt.usage && w.carries(g, at) {
				w.take(g, sample{at: at, UsageReading: g.last.UsageReading, stale: w.statByNeed(g)}, nil)
			} else {
				w.sampleGroup(g, at)
			}
			g.gated = gt != nil && gt.ok
			if g.gated {
				g.gateUsage = gt.usage
			}
		}
		isHot := g.every && g.hot && !g.gone
		hot = hot || isHot
		if full && isHot {
			w.hotList = append(w.hotList, g)
		}
	}
	if !full {
		w.hotList = slices.DeleteFunc(w.hotList, func(g *group) bool { return !g.every || !g.hot || g.gone })
	}
	w.hot, w.hotListOK = hot, true
}

// carries says whether g's reading at at may be carried from its last one
// when its gate did not move: it is a cold group the Policy picks whose read
// would be its usage alone (on v1 its cpu.stat is not due; on v2, where one
// read gives both, its counters cannot move: no quota, or its period timer
// stopped), and the gate's usage counts its own.
func (w *Watcher) carries(g *group, at time.Duration) bool {
	if !(g.every && !g.hot && !g.gone && g.err == nil && !g.written && g.samples > 0 &&
		(g.statRead || g.counters.Usage == nil) && g.last.HasUsageNs) {
		return false
	}
	if w.statByNeed(g) {
		return !w.statDue(g, at, g.last.UsageNs)
	}
	return !(g.limited() && at-g.active <= statIdle(g.period, w.opts.SampleEvery))
}

// sampleGroup reads one group's usage and cpu.stat at time at. A read
// that fails while the group's directory is still there is counted
// (ReadErrors) and leaves the group as it was, its err set until a read
// works again: the next sample reads it again, and the interval from the
// last reading that worked is taken as one (as a missed instant is).
func (w *Watcher) sampleGroup(g *group, at time.Duration) {
	if g.gone || g.counters == nil {
		return
	}
	split := w.readSplit(g)
	s, err := w.read(g, at, split)
	if err != nil {
		w.failed(g, err)
		return
	}
	g.err = nil
	w.take(g, s, split)
}

// failed takes a failed read of g: gone where the group was removed, else
// counted and kept in g.err (its row shows it while no read works).
func (w *Watcher) failed(g *group, err error) {
	if vanished(err, g.dir()) {
		g.gone = true
		g.close()
		return
	}
	g.err = err
	w.readErrors.Add(1)
}

// ReadErrors counts the reads of a group's counters (at a sample or a
// report) that failed while its directory was still there: transient
// errors (EBUSY, a short read, a read racing a move of the group) and
// lasting ones (permission) alike. Safe to call while Run runs.
func (w *Watcher) ReadErrors() int64 { return w.readErrors.Load() }

// readSplit reads a hot group's per-CPU split (ByNeed.PerCPU), nil where
// none is to be read or it cannot be.
func (w *Watcher) readSplit(g *group) []uint64 {
	if !w.opts.ByNeed.PerCPU || !g.hot || g.perCPUFailed || !g.every {
		g.closeSplit()
		return nil
	}
	if g.perCPU == nil {
		dir := g.ref.AcctDir
		if dir == "" {
			dir = g.ref.CPUDir
		}
		r, err := cgroup.OpenPerCPU(w.src.Version, dir, w.opts.Root)
		if err != nil {
			g.perCPUFailed = true
			return nil
		}
		g.perCPU = r
	}
	var err error
	g.split, err = g.perCPU.Read(g.split)
	switch {
	case err == nil && g.perCPU.Threads() > SplitMaxThreads:
		g.perCPUFailed = true
		g.closeSplit()
		return nil
	case err != nil:
		// A transient error (a thread that exited between the listing
		// and its read, on v2; a read racing a move) is read again,
		// reopened, at the next hot sample; this one goes without a split
		// (its usage read from the counters). splitTries in a row, and
		// the group goes without for good.
		g.closeSplit()
		if !vanished(err, g.dir()) {
			w.readErrors.Add(1)
		}
		if g.splitErrs++; g.splitErrs >= splitTries {
			g.perCPUFailed = true
		}
		return nil
	}
	g.splitErrs = 0
	return g.split
}

// splitTries is how many reads of a group's per-CPU split may fail in a
// row before it goes without one for good (ByNeed.PerCPU).
const splitTries = 3

func (g *group) closeSplit() {
	if g.perCPU != nil {
		g.perCPU.Close()
		g.perCPU = nil
	}
}

// take takes one reading of g at time at (split: its per-CPU split, or
// nil).
func (w *Watcher) take(g *group, s sample, split []uint64) {
	if g.samples > 0 && (s.UsageNs < g.last.UsageNs || s.Periods < g.last.Periods) {
		g.samples = 0 // made again under the same path: start over
		g.stall = nil
	}
	if g.samples == 0 {
		g.first = s
		g.histN = 0
	}
	g.last = s
	g.samples++
	g.statStale = s.stale
	if w.statByNeed(g) {
		w.push(g, s.at, s.UsageNs)
	}
	// A group not hot at its last sample was read on the coarse grid
	// since (ByNeed.Coarse): a slot as long as its period, in which no
	// period boundary can be placed (cgroup.PeakPoint.Coarse).
	coarse := w.opts.ByNeed.Coarse && !g.hot && g.samples > 1
	if p := w.opts.ByNeed.Policy; s.HasUsageNs && p != nil {
		g.hot = p.Observe(Sample{ID: g.gid, Path: g.ref.Path, Identity: g.id, At: s.at, UsageNs: s.UsageNs, ThrottledPeriods: s.ThrottledPeriods, PerCPU: split})
	}
	if s.HasUsageNs && g.every {
		g.tracker.Add(cgroup.PeakPoint{At: s.at, UsageNs: s.UsageNs, Periods: s.Periods, Throttled: s.ThrottledPeriods, Stale: s.stale, Coarse: coarse})
	}
}

func (g *group) dir() string {
	if g.ref.CPUDir != "" {
		return g.ref.CPUDir
	}
	return g.ref.AcctDir
}

// read reads the group's counters at time at. Where cpu.stat is a file of
// its own (v1, beside cpuacct.usage), it is read only when its counters
// can have moved since the last read, and the last ones read are carried
// on otherwise: they move only at the period timer, which runs while the
// group has a quota and used CPU (or was throttled) within the last two
// periods: the period it used CPU in, and one idle period after which the
// timer stops; the group's next use starts it again. So a group with a
// quota has cpu.stat read at every sample while its usage or its cpu.stat
// moved within the last two periods and two samples (statIdle), and at the
// sample at which its usage moves again; an idle one, only its usage. With
// ByNeed.Stat, only where nr_throttled can have moved (statDue).
func (w *Watcher) read(g *group, at time.Duration, split []uint64) (sample, error) {
	if g.counters.Usage == nil { // v2: cpu.stat holds the usage
		r, err := g.counters.Read(true)
		if err == nil && (g.samples == 0 || r.UsageNs != g.last.UsageNs || r.CPUCounters != g.last.CPUCounters) {
			g.active = at // for the gate (carries)
		}
		return sample{at: at, UsageReading: r}, err
	}
	var r cgroup.UsageReading
	if split != nil && g.ref.AcctDir != "" {
		// v1's cpuacct.usage_percpu, read already: its sum is cpuacct.usage
		for _, v := range split {
			r.UsageNs += v
		}
		r.HasUsageNs = true
	} else {
		var err error
		if r, err = g.counters.Read(false); err != nil {
			return sample{at: at, UsageReading: r}, err
		}
	}
	moved := g.samples == 0 || r.UsageNs != g.last.UsageNs
	if moved {
		g.active = at
	}
	due := !g.statRead || g.written
	if !due && g.limited() {
		if w.statByNeed(g) {
			due = w.statDue(g, at, r.UsageNs)
		} else {
			due = moved || at-g.active <= statIdle(g.period, w.opts.SampleEvery)
		}
	}
	if !due {
		r.CPUCounters = g.last.CPUCounters // not read: as they were
		return sample{at: at, UsageReading: r, stale: w.statByNeed(g)}, nil
	}
	c, err := g.counters.ReadStat()
	if err != nil {
		return sample{at: at, UsageReading: r}, err
	}
	if g.statRead && c != g.last.CPUCounters {
		g.active = at
	}
	if g.statRead && c.ThrottledPeriods != g.last.ThrottledPeriods {
		g.thrMoved, g.thrMovedAt = true, at
	}
	r.CPUCounters, g.statRead = c, true
	return sample{at: at, UsageReading: r}, nil
}
