package watch

import "time"

// Stats is one group over one interval: what top shows in a row, prints as
// JSON and serves as metrics.
type Stats struct {
	// Time is when the interval ended (set by Run).
	Time time.Time `json:"time"`
	// Path is the group's cgroup path ("/kubepods/burstable/pod.../...").
	Path string `json:"path"`
	Identity
	// IntervalSeconds is the time the figures cover.
	IntervalSeconds float64 `json:"interval_seconds"`

	// LimitCores is the group's own quota per period; nil without a quota.
	LimitCores *float64 `json:"limit_cores"`
	// BurstCores is its burst (cpu.max.burst, cpu.cfs_burst_us) per period.
	BurstCores float64 `json:"burst_cores"`
	// PeriodUsec is the CFS period (0 where there is no cpu controller).
	PeriodUsec uint64 `json:"period_us,omitempty"`
	// RequestCores is the CPU request read back from shares or weight, for
	// groups whose weight the kubelet set (pods, containers, QoS groups,
	// throttlelab's); nil for others.
	RequestCores *float64 `json:"request_cores"`
	Shares       uint64   `json:"shares,omitempty"`
	Weight       uint64   `json:"weight,omitempty"`

	// UsageCores is the mean CPU use over the interval.
	UsageCores *float64 `json:"usage_cores"`
	// PeakPeriodCores is the highest use within one of the group's periods
	// (PeakBasis "period"), or within a sliding window of PeakWindowUsec
	// (PeakBasis "window": groups without a quota, whose period timer did
	// not run, whose cpu.stat was carried, or read on the coarse grid:
	// BasisWindow).
	PeakPeriodCores *float64 `json:"peak_period_cores"`
	PeakBasis       string   `json:"peak_basis,omitempty"`
	PeakWindowUsec  int64    `json:"peak_window_us,omitempty"`

	// Periods and ThrottledPeriods are the interval's nr_periods and
	// nr_throttled; ThrottledPeriodsRatio is their quotient (0 without
	// periods).
	Periods               uint64  `json:"periods"`
	ThrottledPeriods      uint64  `json:"throttled_periods"`
	ThrottledPeriodsRatio float64 `json:"throttled_periods_ratio"`
	// ThrottledSecondsPerSecond is the time the group's runnable threads
	// were held back by the quota, summed over CPUs, per second.
	ThrottledSecondsPerSecond float64 `json:"throttled_seconds_per_second"`
	// Bursts counts periods that used burst; BurstSecondsPerSecond the burst
	// time used per second.
	Bursts                uint64  `json:"bursts"`
	BurstSecondsPerSecond float64 `json:"burst_seconds_per_second"`

	// PressureSomeAvg10 is the kernel's 10 s average of cpu.pressure "some"
	// (percent); PressureSomeRatio the share of this interval in which some
	// runnable task of the group waited. Both nil without PSI (v1).
	PressureSomeAvg10 *float64 `json:"pressure_some_avg10"`
	PressureSomeRatio *float64 `json:"pressure_some_ratio"`
	// StallQuotaRatio and StallContentionRatio split PressureSomeRatio by
	// cause (cgroup.SplitStall): the share of the interval the group's
	// quota held it back, and the share it waited for a CPU while not
	// throttled. StallSplit says whether they are known: "psi", or
	// "unknown" (both nil) where the group has no cpu.pressure (cgroup v1
	// without a v2 group of the same path) or no usage, and in an interval
	// at whose start its cpu.pressure could not be read yet.
	StallSplit           string   `json:"stall_split"`
	StallQuotaRatio      *float64 `json:"stall_quota_ratio"`
	StallContentionRatio *float64 `json:"stall_contention_ratio"`

	// Procs is the number of processes directly in the group.
	Procs int `json:"procs"`

	// Totals are the cumulative counters at the end of the interval.
	Totals Totals `json:"totals"`

	// Error says why the group's figures are missing (permission denied).
	Error string `json:"error,omitempty"`
}

// Totals are a group's cumulative counters, as cAdvisor exports them.
type Totals struct {
	UsageSeconds float64 `json:"usage_seconds"`
	// UserSeconds and SystemSeconds are only known on v2.
	UserSeconds      *float64 `json:"user_seconds,omitempty"`
	SystemSeconds    *float64 `json:"system_seconds,omitempty"`
	Periods          uint64   `json:"periods"`
	ThrottledPeriods uint64   `json:"throttled_periods"`
	ThrottledSeconds float64  `json:"throttled_seconds"`
	Bursts           uint64   `json:"bursts"`
	BurstSeconds     float64  `json:"burst_seconds"`
	// PressureSomeSeconds and PressureFullSeconds are PSI's totals (v2).
	PressureSomeSeconds *float64 `json:"pressure_some_seconds,omitempty"`
	PressureFullSeconds *float64 `json:"pressure_full_seconds,omitempty"`
	// StallQuotaSeconds and StallContentionSeconds add up the intervals'
	// split of the stall since the group was first watched (nil until an
	// interval's split is known).
	StallQuotaSeconds      *float64 `json:"stall_quota_seconds,omitempty"`
	StallContentionSeconds *float64 `json:"stall_contention_seconds,omitempty"`
	// QuotaUsec is -1 without a quota.
	QuotaUsec int64 `json:"quota_us"`
	HasUsage  bool  `json:"-"`
	Limits    bool  `json:"-"` // the group is in the cpu controller's hierarchy
}

// Stall split values.
const (
	StallSplitPSI     = "psi"
	StallSplitUnknown = "unknown"
)

func ptr(v float64) *float64 { return &v }
