package record

import (
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/loadgen"
)

// Run is what one run measured: the recorded run, whichever backend made it.
// It is the run's summary.json.
type Run struct {
	ID     string `json:"id"`
	Index  int    `json:"index"`
	Config string `json:"config"`
	Load   string `json:"load"`
	Repeat int    `json:"repeat"`
	// Seed is the run's repeat seed (experiment.RepeatSeed): the load's
	// arrivals, tile order and balancer picks; shared by the configs of one
	// repeat.
	Seed      uint64          `json:"seed"`
	QoS       cgroup.QoSClass `json:"qos"`
	Settings  cgroup.Settings `json:"cgroup_settings"`
	Instances []string        `json:"instances"`
	Summary   *loadgen.Totals `json:"load_summary"`
	// CPUStat holds each instance's cpu.stat over the measured load (not the
	// warm-up), and Total their sum.
	CPUStat map[string]cgroup.CPUStat `json:"cpu_stat"`
	Total   cgroup.CPUStat            `json:"cpu_stat_total"`
	// Usage of each instance in cores: mean over the run, the highest
	// rolling 100 ms and 1 s windows, and the highest use within one of its
	// own CFS periods (from the 10 ms samples).
	Usage      map[string]UsageStats     `json:"usage_cores"`
	Neighbours map[string]cgroup.CPUStat `json:"neighbour_cpu_stat,omitempty"`
	// NeighbourUsage is each neighbour group's use in cores, like Usage.
	NeighbourUsage map[string]UsageStats `json:"neighbour_usage_cores,omitempty"`
	Probe          *loadgen.Totals       `json:"probe_summary,omitempty"`
	Started        time.Time             `json:"started"`
	Seconds        float64               `json:"seconds"`
	// HostOtherCores is the CPU the host spent, on average over the
	// measurement, on work outside the run's groups (its instances,
	// neighbours and load generator): other processes, the kernel's own
	// threads, and time a hypervisor gave to other guests. Absent where the
	// backend cannot see the host (sim, kubernetes). A run beside other
	// work measured that work's interference too (Disturbed).
	HostOtherCores *float64 `json:"host_other_cores,omitempty"`
	// Held is what the backend kept in memory of the files it wrote (nil:
	// read them): never in summary.json.
	Held *Held `json:"-"`
}

// DisturbedShare is the share of the host's CPUs that other work may use
// during a run before its figures are taken as disturbed: well above what
// the kernel's threads and the tools around use on a quiet host.
const DisturbedShare = 0.1

// Disturbed reports whether other work on the host used more than
// DisturbedShare of its cores during the run.
func (r *Run) Disturbed(cores int) bool {
	return r.HostOtherCores != nil && cores > 0 && *r.HostOtherCores > DisturbedShare*float64(cores)
}

// UsageStats is an instance's CPU use in cores at three resolutions, and
// within its own CFS periods.
type UsageStats struct {
	Mean float64 `json:"mean"`
	// Peak100ms and Peak1s are the highest use over rolling windows
	// (cgroup.Window's rule: each window at least its length). A rolling
	// 100 ms window that straddles a period boundary can hold most of two
	// periods' quota, so a limited group's Peak100ms can read up to about
	// twice its limit.
	Peak100ms float64 `json:"peak_100ms"`
	Peak1s    float64 `json:"peak_1s"`
	// PeakPeriod is the highest use within one of the group's own periods,
	// between the samples where nr_periods moved (cgroup.PeakTracker): at
	// most quota + burst per period, up to the sampling error documented
	// there. 0 for a group without a quota, or whose period timer never ran.
	PeakPeriod float64 `json:"peak_period,omitempty"`
}

// ThrottledPct is the share of periods in which the run's instances were throttled.
func (r *Run) ThrottledPct() float64 {
	if r.Total.Periods == 0 {
		return 0
	}
	return 100 * float64(r.Total.ThrottledPeriods) / float64(r.Total.Periods)
}

// UsageStatsOf computes one group's use in cores from cumulative samples;
// set is the group's CPU settings (its period, quota and burst).
func UsageStatsOf(samples []cgroup.UsageSample, i int, set cgroup.Settings) UsageStats {
	var c columns
	for _, s := range samples {
		c.add(s)
	}
	return c.usageStats(i, set)
}

// usageStats is UsageStatsOf of group i's columns.
func (c *columns) usageStats(i int, set cgroup.Settings) UsageStats {
	var st UsageStats
	at, usage := c.at, c.column(i)
	if len(at) < 2 {
		return st
	}
	if span := at[len(at)-1] - at[0]; span > 0 {
		st.Mean = float64(usage[len(usage)-1]-usage[0]) / float64(span)
	}
	peak := func(length time.Duration) float64 {
		best, w := 0.0, cgroup.NewWindow(length)
		for j, t := range at {
			if cores, ok := w.Add(t, uint64(usage[j])); ok {
				best = max(best, cores)
			}
		}
		return best
	}
	st.Peak100ms, st.Peak1s = peak(100*time.Millisecond), peak(time.Second)
	st.PeakPeriod = c.peakPeriod(i, set)
	return st
}

// PeakPeriodOf is the highest use in cores within one of group i's own CFS
// periods, from samples that carry nr_periods (0 without a quota, or
// without two period boundaries in the samples).
func PeakPeriodOf(samples []cgroup.UsageSample, i int, set cgroup.Settings) float64 {
	var c columns
	for _, s := range samples {
		c.add(s)
	}
	return c.peakPeriod(i, set)
}

// peakPeriod is PeakPeriodOf of group i's columns.
func (c *columns) peakPeriod(i int, set cgroup.Settings) float64 {
	period := set.QuotaPeriod()
	if period <= 0 || i >= len(c.periods) || c.periods[i] == nil {
		return 0
	}
	tr := cgroup.NewPeakTracker(period, period)
	tr.SetLimit(set.LimitCores())
	usage, thr, periods := c.column(i), c.throttled(i), c.periods[i]
	for j, t := range c.at {
		tr.Add(cgroup.PeakPoint{At: t, UsageNs: uint64(usage[j]), Periods: periods[j], Throttled: thr[j]})
	}
	if cores, basis, _, ok := tr.Take(); ok && basis == cgroup.BasisPeriod {
		return cores
	}
	return 0
}
