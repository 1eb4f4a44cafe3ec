package watch

import (
	"errors"
	"io/fs"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
)

// Report closes the interval that ends with the last Sample and returns one
// Stats per group that is still there, sorted by path; the next interval
// starts at that sample. Groups seen in fewer than two samples are left out
// (they appear in the next report), and so are groups removed meanwhile.
func (w *Watcher) Report() []Stats {
	out := make([]Stats, 0, len(w.sorted))
	for _, g := range w.sorted {
		if (!g.every || w.opts.ByNeed.Coarse) && g.samples > 0 && g.last.at < w.lastAt {
			// Read at reports only, or on the coarse grid and not at the
			// last sample: now, just after it, so that every group has its
			// row (a report that came after a gap, off the grid, would
			// leave it out).
			w.sampleGroup(g, w.lastAt)
		}
		if g.gone {
			continue
		}
		if g.err != nil {
			out = append(out, Stats{Path: g.ref.Path, Identity: g.id, Error: errorText(g.err)})
			continue
		}
		if g.samples < 2 {
			continue
		}
		var err error
		if g.statStale {
			err = w.refreshStat(g)
		}
		var st Stats
		if err == nil {
			st, err = w.report(g)
		}
		if err != nil {
			if vanished(err, g.dir()) {
				g.gone = true
				g.close()
				continue
			}
			w.readErrors.Add(1) // this row shows it; the samples go on
			st = Stats{Path: g.ref.Path, Identity: g.id, Error: errorText(err)}
		}
		out = append(out, st)
		g.first, g.samples = g.last, 1
	}
	return out
}

// errorText says what an unreadable group's row shows.
func errorText(err error) string {
	if errors.Is(err, fs.ErrPermission) {
		return "permission denied (run as root)"
	}
	return err.Error()
}

func (w *Watcher) report(g *group) (Stats, error) {
	a, b := g.first, g.last
	secs := (b.at - a.at).Seconds()
	st := Stats{Path: g.ref.Path, Identity: g.id, IntervalSeconds: secs}
	t := &st.Totals
	t.QuotaUsec, t.HasUsage, t.Limits = -1, b.HasUsageNs, g.ref.CPUDir != ""
	if b.HasUsageNs {
		st.UsageCores = ptr(float64(b.UsageNs-a.UsageNs) / 1e9 / secs)
		t.UsageSeconds = float64(b.UsageNs) / 1e9
		if b.HasUsage { // v2 cpu.stat
			t.UserSeconds, t.SystemSeconds = ptr(float64(b.UserUsec)/1e6), ptr(float64(b.SystemUsec)/1e6)
		}
	}
	d := b.CPUStat.Sub(a.CPUStat)
	st.Periods, st.ThrottledPeriods, st.Bursts = d.Periods, d.ThrottledPeriods, d.Bursts
	if d.Periods > 0 {
		st.ThrottledPeriodsRatio = float64(d.ThrottledPeriods) / float64(d.Periods)
	}
	st.ThrottledSecondsPerSecond = float64(d.ThrottledUsec) / 1e6 / secs
	st.BurstSecondsPerSecond = float64(d.BurstUsec) / 1e6 / secs
	t.Periods, t.ThrottledPeriods, t.Bursts = b.Periods, b.ThrottledPeriods, b.Bursts
	t.ThrottledSeconds, t.BurstSeconds = float64(b.ThrottledUsec)/1e6, float64(b.BurstUsec)/1e6

	if peak, basis, window, ok := g.tracker.Take(); ok {
		st.PeakPeriodCores, st.PeakBasis = ptr(peak), basis
		if basis == BasisWindow {
			st.PeakWindowUsec = window.Microseconds()
		}
	}
	if !g.every {
		// Read at reports only (Policy.Picks): its usage and cpu.stat,
		// not its settings, pressure or processes (the agent needs none
		// of them for the groups it does not summarise).
		return st, nil
	}
	read := w.fresh(g, b.at)
	cur := &cgroup.CPULimits{}
	if g.ref.CPUDir != "" {
		l := g.settings
		if read || l == nil {
			var err error
			if l, err = cgroup.ReadGroupCPU(g.ref.CPUDir, w.src.Version); err != nil {
				return st, err
			}
			g.written = false // read again: the rules hold them from here
		}
		cur = l
		st.PeriodUsec, st.Shares, st.Weight, t.QuotaUsec = l.PeriodUsec, l.Shares, l.Weight, l.QuotaUsec
		period := time.Duration(0)
		g.quota = 0
		if l.QuotaUsec > 0 {
			g.quota = time.Duration(l.QuotaUsec) * time.Microsecond
			st.LimitCores = ptr(l.LimitCores)
			st.BurstCores = float64(l.BurstUsec) / float64(l.PeriodUsec)
			period = time.Duration(l.PeriodUsec) * time.Microsecond
		}
		g.period = period
		g.tracker.SetPeriod(period, w.peakWindow(period))
		limit := 0.0
		if st.LimitCores != nil {
			limit = *st.LimitCores + st.BurstCores
		}
		g.tracker.SetLimit(limit)
		if g.id.Kubelet() {
			if c, ok := cgroup.RequestCores(l.Shares, l.Weight, w.opts.Mapping); ok {
				st.RequestCores = ptr(c)
			}
		}
	}
	st.StallSplit = StallSplitUnknown
	if g.psiDir != "" {
		if p, err := ReadPressure(g.psiDir); err == nil {
			st.PressureSomeAvg10 = ptr(p.SomeAvg10)
			t.PressureSomeSeconds, t.PressureFullSeconds = ptr(float64(p.SomeTotalUsec)/1e6), ptr(float64(p.FullTotalUsec)/1e6)
			if g.pressure != nil && p.SomeTotalUsec >= g.pressure.SomeTotalUsec {
				some := float64(p.SomeTotalUsec-g.pressure.SomeTotalUsec) / 1e6
				st.PressureSomeRatio = ptr(some / secs)
				if st.UsageCores != nil {
					w.splitStall(g, &st, some, float64(d.ThrottledUsec)/1e6, secs)
				}
			}
			g.pressure = &p
		} else if !exists(g.dir()) {
			return st, err // the group went (a missing cpu.pressure alone is no PSI: a kernel without it, no v2 group)
		}
	}
	if g.stall != nil {
		t.StallQuotaSeconds, t.StallContentionSeconds = ptr(g.stall.QuotaSeconds), ptr(g.stall.ContentionSeconds)
	}
	if read || g.settings == nil {
		n, err := CountProcs(g.dir())
		if err != nil {
			return st, err
		}
		g.procs, g.settingsAt = n, b.at
		g.settings = cur
	}
	st.Procs = g.procs
	return st, nil
}

// splitStall splits the interval's stall of some seconds (cpu.pressure)
// into quota and contention, and adds them to the group's totals.
func (w *Watcher) splitStall(g *group, st *Stats, some, throttled, secs float64) {
	sp := cgroup.SplitStall(some, throttled, *st.UsageCores*secs, secs, w.cpus)
	st.StallSplit = StallSplitPSI
	st.StallQuotaRatio, st.StallContentionRatio = ptr(sp.QuotaSeconds/secs), ptr(sp.ContentionSeconds/secs)
	if g.stall == nil {
		g.stall = &cgroup.StallSplit{}
	}
	g.stall.QuotaSeconds += sp.QuotaSeconds
	g.stall.ContentionSeconds += sp.ContentionSeconds
}
