package watch

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/throttlelab/throttlelab/cgroup"
)

// labels are cAdvisor's: id is the cgroup path; name the group's name
// (cAdvisor puts the runtime's container name there); container, pod and
// namespace the Kubernetes names where they are known.
var labels = []string{"id", "name", "container", "pod", "namespace"}

func desc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string{}, labels...), extra...), nil)
}

// The metrics, named and described as cAdvisor names them, and the ones it
// has not.
var (
	descUsage            = desc("container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", "cpu")
	descUser             = desc("container_cpu_user_seconds_total", "Cumulative user cpu time consumed in seconds.")
	descSystem           = desc("container_cpu_system_seconds_total", "Cumulative system cpu time consumed in seconds.")
	descPeriods          = desc("container_cpu_cfs_periods_total", "Number of elapsed enforcement period intervals.")
	descThrottledPeriods = desc("container_cpu_cfs_throttled_periods_total", "Number of throttled period intervals.")
	descThrottledSeconds = desc("container_cpu_cfs_throttled_seconds_total", "Total time duration the container has been throttled.")
	descBurstPeriods     = desc("container_cpu_cfs_burst_periods_total", "Number of periods when burst occurs.")
	descBurstSeconds     = desc("container_cpu_cfs_burst_seconds_total", "Total time duration the container has been bursted.")
	descSpecPeriod       = desc("container_spec_cpu_period", "CPU period of the container.")
	descSpecQuota        = desc("container_spec_cpu_quota", "CPU quota of the container.")
	descSpecShares       = desc("container_spec_cpu_shares", "CPU share of the container.")
	descProcesses        = desc("container_processes", "Number of processes running inside the container.")
	descPressureWaiting  = desc("container_pressure_cpu_waiting_seconds_total", "Total time duration tasks in the container have waited due to CPU congestion.")
	descPressureStalled  = desc("container_pressure_cpu_stalled_seconds_total", "Total time duration no tasks in the container could make progress due to CPU congestion.")

	descUsageCores = desc("throttlelab_cpu_usage_cores", "Mean CPU use over the last interval, in cores (throttlelab top's interval, 1 s by default).")
	descPeakCores  = desc("throttlelab_cpu_peak_period_cores", "Highest CPU use within one CFS period of the group during the last interval, in cores: what a scrape every 15 s averages away. basis=\"window\": over sliding windows (groups without a quota, limited ones whose period timer did not run, whose cpu.stat was carried or that were read every 100 ms: the agent's containers not near a limit).", "basis")
	descLimitCores = desc("throttlelab_cpu_limit_cores", "CFS quota per period, in cores.")
	descThrRatio   = desc("throttlelab_cpu_throttled_periods_ratio", "Throttled share of the periods of the last interval.")
	descStall      = desc("throttlelab_cpu_stall_seconds_total", "Time some of the group's runnable tasks stalled (cpu.pressure \"some\"), by cause: cause=\"quota\" the quota held them back (throttled), cause=\"contention\" they waited for a CPU while not throttled; counted since throttlelab began watching the group, absent where the split is unknown (no cpu.pressure).", "cause")
)

// Collector serves the latest report of a Watcher as Prometheus metrics.
type Collector struct {
	mu      sync.Mutex
	stats   []Stats
	mapping cgroup.WeightMapping
	noStall bool
}

// NewCollector returns an empty collector; mapping reads v2 weights back as
// cAdvisor's shares.
func NewCollector(mapping cgroup.WeightMapping) *Collector {
	return &Collector{mapping: mapping}
}

// WithoutStall leaves throttlelab_cpu_stall_seconds_total out, for a caller
// that serves the stall's split under labels of its own (the agent), and
// returns c.
func (c *Collector) WithoutStall() *Collector {
	c.noStall = true
	return c
}

// Update replaces the stats served.
func (c *Collector) Update(stats []Stats) {
	c.mu.Lock()
	c.stats = stats
	c.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUsage, descUser, descSystem, descPeriods, descThrottledPeriods, descThrottledSeconds,
		descBurstPeriods, descBurstSeconds, descSpecPeriod, descSpecQuota, descSpecShares, descProcesses, descPressureWaiting,
		descPressureStalled, descUsageCores, descPeakCores, descLimitCores, descThrRatio, descStall} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	stats := c.stats
	c.mu.Unlock()
	for i := range stats {
		s := &stats[i]
		if s.Error != "" {
			continue
		}
		lv := []string{s.Path, s.Name, s.Container, s.Pod, s.Namespace}
		counter := func(d *prometheus.Desc, v float64, extra ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, append(lv, extra...)...)
		}
		gauge := func(d *prometheus.Desc, v float64, extra ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append(lv, extra...)...)
		}
		t := &s.Totals
		if t.HasUsage {
			counter(descUsage, t.UsageSeconds, "total")
		}
		if t.UserSeconds != nil {
			counter(descUser, *t.UserSeconds)
			counter(descSystem, *t.SystemSeconds)
		}
		// cAdvisor exports the CFS counters only for groups with a quota.
		if t.QuotaUsec > 0 {
			counter(descPeriods, float64(t.Periods))
			counter(descThrottledPeriods, float64(t.ThrottledPeriods))
			counter(descThrottledSeconds, t.ThrottledSeconds)
			counter(descBurstPeriods, float64(t.Bursts))
			counter(descBurstSeconds, t.BurstSeconds)
			gauge(descSpecQuota, float64(t.QuotaUsec))
			gauge(descLimitCores, *s.LimitCores)
			gauge(descThrRatio, s.ThrottledPeriodsRatio)
		}
		if t.Limits {
			gauge(descSpecPeriod, float64(s.PeriodUsec))
			shares := s.Shares
			if s.Weight > 0 {
				if lo, _, ok := cgroup.WeightToShares(s.Weight, c.mapping); ok {
					shares = lo // cAdvisor's own reading of a weight: the low end
				}
			}
			gauge(descSpecShares, float64(shares))
		}
		gauge(descProcesses, float64(s.Procs))
		if t.PressureSomeSeconds != nil {
			counter(descPressureWaiting, *t.PressureSomeSeconds)
			counter(descPressureStalled, *t.PressureFullSeconds)
		}
		if t.StallQuotaSeconds != nil && !c.noStall {
			counter(descStall, *t.StallQuotaSeconds, "quota")
			counter(descStall, *t.StallContentionSeconds, "contention")
		}
		if s.UsageCores != nil {
			gauge(descUsageCores, *s.UsageCores)
		}
		if s.PeakPeriodCores != nil {
			gauge(descPeakCores, *s.PeakPeriodCores, s.PeakBasis)
		}
	}
}

// Handler serves the collector's metrics in the Prometheus text format.
func (c *Collector) Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
