package cgroup

import (
	"fmt"
	"strconv"
	"time"

	"github.com/throttlelab/throttlelab/units"
)

// Settings is the CPU configuration of one group, in the kernel's terms. Zero
// values leave a setting alone (the kernel's defaults), except QuotaUsec, where
// -1 means no limit.
type Settings struct {
	QuotaUsec  int64
	PeriodUsec uint64
	BurstUsec  uint64
	// Shares is applied on v1, Weight on v2; KubeCPU.Settings fills in both.
	Shares uint64
	Weight uint64
	// Cpus and Mems confine the group to CPUs and memory nodes ("0-1", "0").
	Cpus, Mems string
}

// QuotaPeriod is the CFS period of a group with a quota (the kernel's 100 ms
// when PeriodUsec is 0), and 0 for a group without one: it has no periods.
func (s Settings) QuotaPeriod() time.Duration {
	switch {
	case s.QuotaUsec <= 0:
		return 0
	case s.PeriodUsec == 0:
		return 100 * time.Millisecond
	}
	return time.Duration(s.PeriodUsec) * time.Microsecond
}

// LimitCores is the most the group can use within one period, in cores:
// (quota + burst) / period, 0 without a quota.
func (s Settings) LimitCores() float64 {
	p := s.QuotaPeriod()
	if p == 0 {
		return 0
	}
	return float64(time.Duration(s.QuotaUsec+int64(s.BurstUsec))*time.Microsecond) / float64(p)
}

// FieldError is a bad CPU setting; Field names it (request, limit, period, burst).
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Msg }

// KubeCPU is a container's CPU settings in Kubernetes terms.
type KubeCPU struct {
	RequestMilli, LimitMilli int64
	PeriodUsec               uint64 // 0: the default 100 ms
	BurstUsec                uint64
	Cpus                     string
}

// Bounds of the CFS period the kernel takes (sched_cfs_bandwidth_slice aside).
const (
	MinPeriodUsec = 1000
	MaxPeriodUsec = 1000000
)

func (k KubeCPU) period() uint64 {
	if k.PeriodUsec == 0 {
		return DefaultPeriod
	}
	return k.PeriodUsec
}

// request is the request that takes effect: the API server defaults an unset
// request to the limit.
func (k KubeCPU) request() int64 {
	if k.RequestMilli == 0 && k.LimitMilli > 0 {
		return k.LimitMilli
	}
	return k.RequestMilli
}

// Settings translates k as the kubelet and runc would, and returns its QoS class.
// It refuses what Kubernetes or the kernel would refuse, and amounts beyond
// units.MaxCPUs, so that no product below overflows.
func (k KubeCPU) Settings(m WeightMapping) (Settings, QoSClass, error) {
	for _, f := range []struct {
		name  string
		milli int64
	}{{"request", k.RequestMilli}, {"limit", k.LimitMilli}} {
		if f.milli < 0 {
			return Settings{}, "", &FieldError{f.name, fmt.Sprintf("cpu %s %dm: must not be negative", f.name, f.milli)}
		}
		if f.milli > units.MaxMilliCPU {
			return Settings{}, "", &FieldError{f.name, fmt.Sprintf("cpu %s %dm: more than %d CPUs, the most throttlelab takes", f.name, f.milli, units.MaxCPUs)}
		}
	}
	if k.LimitMilli > 0 && k.RequestMilli > k.LimitMilli {
		return Settings{}, "", &FieldError{"request", fmt.Sprintf("cpu request %dm is above the limit %dm: Kubernetes rejects that", k.RequestMilli, k.LimitMilli)}
	}
	period := k.period()
	if period < MinPeriodUsec || period > MaxPeriodUsec {
		return Settings{}, "", &FieldError{"period", fmt.Sprintf("cpu period %d us: the kernel takes %d to %d (1ms to 1s)", period, MinPeriodUsec, MaxPeriodUsec)}
	}
	if k.Cpus != "" {
		if _, err := ParseCPUList(k.Cpus); err != nil {
			return Settings{}, "", &FieldError{"cpuset", err.Error()}
		}
	}
	s := Settings{PeriodUsec: period, QuotaUsec: MilliCPUToQuota(k.LimitMilli, period), Shares: MilliCPUToShares(k.request()), Cpus: k.Cpus}
	if k.BurstUsec > 0 {
		if s.QuotaUsec < 0 {
			return Settings{}, "", &FieldError{"burst", "cpu burst needs a limit: burst is quota carried over between periods"}
		}
		if k.BurstUsec > uint64(s.QuotaUsec) {
			return Settings{}, "", &FieldError{"burst", fmt.Sprintf("cpu burst %d us is above the quota %d us: the kernel refuses a burst larger than the quota", k.BurstUsec, s.QuotaUsec)}
		}
		s.BurstUsec = k.BurstUsec
	}
	var err error
	if s.Weight, err = SharesToWeight(s.Shares, m); err != nil {
		return Settings{}, "", err
	}
	return s, QoSOf(k.RequestMilli, k.LimitMilli), nil
}

// FieldWarning is a CPU setting that Kubernetes would change on its way to
// the kernel; Field names it (request, limit) and Msg says how.
type FieldWarning struct {
	Field string
	Msg   string
}

func (w FieldWarning) String() string { return w.Field + ": " + w.Msg }

// Changes lists where the kubelet's translation makes the group's settings
// differ from what k asks for: the 1 ms floor under a quota, and the bounds
// of cpu.shares. Nothing is refused; the run gets what a pod would get, and
// these say so.
func (k KubeCPU) Changes() []FieldWarning {
	var out []FieldWarning
	period := k.period()
	if k.LimitMilli > 0 && k.LimitMilli <= units.MaxMilliCPU && period >= MinPeriodUsec && period <= MaxPeriodUsec {
		if exact := float64(k.LimitMilli) * float64(period) / milliCPUPerCPU; exact < MinQuotaUsec {
			out = append(out, FieldWarning{"limit", fmt.Sprintf(
				"limit %s with a %s period is a quota of %.4gus, under the kubelet's 1ms floor: it sets %dus, which is %.3g CPU",
				units.FormatMilliCPU(k.LimitMilli), time.Duration(period)*time.Microsecond, exact, MinQuotaUsec, float64(MinQuotaUsec)/float64(period))})
		}
	}
	if r := k.request(); r > 0 && r <= units.MaxMilliCPU {
		field := "request"
		if k.RequestMilli == 0 {
			field = "limit" // the request defaulted to it
		}
		switch raw := r * SharesPerCPU / milliCPUPerCPU; {
		case raw < MinShares:
			out = append(out, FieldWarning{field, fmt.Sprintf("a request of %s is %d cpu.shares; the kubelet sets at least %d (as for %dm)",
				units.FormatMilliCPU(r), raw, MinShares, MinShares*milliCPUPerCPU/SharesPerCPU+1)})
		case raw > MaxShares:
			out = append(out, FieldWarning{field, fmt.Sprintf("a request of %s would be %d cpu.shares; the kernel stops at %d (256 CPUs)",
				units.FormatMilliCPU(r), raw, MaxShares)})
		}
	}
	return out
}

// Write is one value written to one file of a group, in one controller's
// hierarchy ("cpu", "cpuset"; on v2 both are the unified group).
type Write struct {
	Controller string
	File       string
	Value      string
}

// Writes returns the files to write for s, in an order the kernel accepts, for a
// cpu controller on version "v1" or "v2".
//
// Kernel quirks that decide the order: the burst must not exceed the quota, so an
// old burst is cleared before the quota changes and the new one set after it; on
// v1 cpuset.cpus and cpuset.mems must both be set before any task can join the
// group; on v2 the period travels in cpu.max with the quota.
func (s Settings) Writes(version string, burstSupported bool) []Write {
	var w []Write
	add := func(ctrl, file, v string) { w = append(w, Write{ctrl, file, v}) }
	if s.Cpus != "" {
		add("cpuset", "cpuset.cpus", s.Cpus)
	}
	if s.Mems != "" {
		add("cpuset", "cpuset.mems", s.Mems)
	}
	quota := "max"
	if s.QuotaUsec > 0 {
		quota = strconv.FormatInt(s.QuotaUsec, 10)
	}
	period := s.PeriodUsec
	if period == 0 {
		period = DefaultPeriod
	}
	if version == "v1" {
		if burstSupported {
			add("cpu", "cpu.cfs_burst_us", "0")
		}
		add("cpu", "cpu.cfs_period_us", strconv.FormatUint(period, 10))
		if s.QuotaUsec > 0 {
			add("cpu", "cpu.cfs_quota_us", quota)
		} else {
			add("cpu", "cpu.cfs_quota_us", "-1")
		}
		if burstSupported && s.BurstUsec > 0 {
			add("cpu", "cpu.cfs_burst_us", strconv.FormatUint(s.BurstUsec, 10))
		}
		if s.Shares > 0 {
			add("cpu", "cpu.shares", strconv.FormatUint(s.Shares, 10))
		}
		return w
	}
	if burstSupported {
		add("cpu", "cpu.max.burst", "0")
	}
	add("cpu", "cpu.max", quota+" "+strconv.FormatUint(period, 10))
	if burstSupported && s.BurstUsec > 0 {
		add("cpu", "cpu.max.burst", strconv.FormatUint(s.BurstUsec, 10))
	}
	if s.Weight > 0 {
		add("cpu", "cpu.weight", strconv.FormatUint(s.Weight, 10))
	}
	return w
}
