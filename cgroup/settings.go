package cgroup

import (
	"fmt"
	"strconv"
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

// Settings translates k as the kubelet and runc would, and returns its QoS class.
func (k KubeCPU) Settings(m WeightMapping) (Settings, QoSClass, error) {
	if k.RequestMilli < 0 || k.LimitMilli < 0 {
		return Settings{}, "", &FieldError{"request", "cpu request and limit must not be negative"}
	}
	if k.LimitMilli > 0 && k.RequestMilli > k.LimitMilli {
		return Settings{}, "", &FieldError{"request", fmt.Sprintf("cpu request %dm is above the limit %dm: Kubernetes rejects that", k.RequestMilli, k.LimitMilli)}
	}
	period := k.PeriodUsec
	if period == 0 {
		period = DefaultPeriod
	}
	if period < 1000 || period > 1000000 {
		return Settings{}, "", &FieldError{"period", fmt.Sprintf("cpu period %d us: the kernel takes 1000 to 1000000", period)}
	}
	request := k.RequestMilli
	if request == 0 && k.LimitMilli > 0 {
		request = k.LimitMilli // the API server defaults the request to the limit
	}
	s := Settings{PeriodUsec: period, QuotaUsec: MilliCPUToQuota(k.LimitMilli, period), Shares: MilliCPUToShares(request), Cpus: k.Cpus}
	if k.BurstUsec > 0 {
		if s.QuotaUsec < 0 {
			return Settings{}, "", &FieldError{"burst", "cpu burst needs a limit: burst is quota carried over between periods"}
		}
		if int64(k.BurstUsec) > s.QuotaUsec {
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
