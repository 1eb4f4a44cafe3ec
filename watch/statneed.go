package watch

import (
	"time"
)

// statByNeed says whether g's cpu.stat is read by need
// (ByNeed.Stat): a limited v1 group, whose usage is in a file of
// its own, on a host whose slack is known.
func (w *Watcher) statByNeed(g *group) bool {
	return w.slack > 0 && g.limited() && g.counters != nil && g.counters.Usage != nil
}

// statDue says whether nr_throttled can have moved since g's last sample,
// at a sample at time at with usage usageNs (ByNeed.Stat), so that
// its cpu.stat must be read. The kernel adds to nr_throttled at a tick of
// the group's period timer, when a run queue of the group is throttled
// then; it was throttled within the period that tick ends (or earlier,
// and then the earlier ticks counted it too), and the group's usage
// within that period is then at least its quota less the slack
// (cgroup.ThrottleSlack). A tick after the last sample (at prev) ends a
// period that began after prev less a period; the sample looked back to
// is the last at or before that less one sample interval (a refill a
// little late). So the read is due where the usage since that sample
// reaches the quota less the slack, where the last move was seen within
// that reach (throttled periods in a row, whose later ones may hold less
// use than their quota: the refill first pays what the group ran over),
// and where the history does not reach back so far. A moment's idle
// ticks (nr_periods) are not read: Report reads them.
func (w *Watcher) statDue(g *group, at time.Duration, usageNs uint64) bool {
	floor := g.quota - w.slack
	if g.statAlways || g.quota <= 0 || floor <= 0 || g.histN == 0 || len(g.hist) == 0 {
		return true
	}
	n := len(g.hist)
	prev := g.hist[(g.histN-1)%n].at
	back := prev - g.period - w.opts.SampleEvery
	if g.thrMoved && g.thrMovedAt > back {
		return true
	}
	for i := g.histN - 1; i >= 0 && i > g.histN-1-n; i-- {
		p := g.hist[i%n]
		if p.at <= back {
			return usageNs < p.usage || usageNs-p.usage >= uint64(floor)
		}
	}
	return true // the history does not reach back a period
}

// push records g's usage at a sample for statDue; the ring holds a period
// and a few samples more.
func (w *Watcher) push(g *group, at time.Duration, usageNs uint64) {
	n := 4
	if g.period > 0 {
		n += int(min(g.period/w.opts.SampleEvery, 256))
	}
	if len(g.hist) != n {
		g.hist, g.histN = make([]usagePoint, n), 0
	}
	g.hist[g.histN%n] = usagePoint{at: at, usage: usageNs}
	g.histN++
}

// refreshStat reads the cpu.stat that g's last sample carried
// (ByNeed.Stat), so that a report's counters are exact. A move of
// nr_throttled since the last read that statDue, asked now, says cannot
// have happened means its rule failed for this group (its tasks are not
// the same in both hierarchies, its quota changed unseen): counted, and
// the group's cpu.stat is read at every sample from then on. (A tick
// after the last sample is within statDue's reach now: no false alarm.)
func (w *Watcher) refreshStat(g *group) error {
	c, err := g.counters.ReadStat()
	if err != nil {
		return err
	}
	if c.ThrottledPeriods != g.last.ThrottledPeriods {
		r, err := g.counters.Read(false)
		if err != nil {
			return err
		}
		if !w.statDue(g, g.last.at, r.UsageNs) {
			g.statAlways = true
			w.missed.Add(1)
		}
		g.thrMoved, g.thrMovedAt = true, g.last.at
	}
	if c != g.last.CPUCounters {
		g.active = g.last.at
	}
	g.last.CPUCounters, g.statStale = c, false
	return nil
}

// MissedThrottles counts the moves of nr_throttled that a report found
// after ByNeed.Stat had left cpu.stat unread where its rule said
// none could happen (0 where the rule holds). Safe to call while Run runs.
func (w *Watcher) MissedThrottles() int64 { return w.missed.Load() }

// statIdle is how long after its counters last moved a v1 group with a quota
// of the given period has its cpu.stat read at every sample (sampling every
// every): two periods (the period timer's last two ticks) and two samples.
func statIdle(period, every time.Duration) time.Duration {
	return 2*period + 2*every
}
