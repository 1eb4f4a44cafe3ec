package cfs

import "time"

// Stat is a group's cpu.stat in common units (v1 counts time in ns, v2 in
// us), with the CPU pressure (PSI) totals of cpu.pressure where the kernel
// has them (v2): the one type of these counters, which the kernel's
// readers (package cgroup names it CPUStat), the recorded runs and the
// model share. Bandwidth counts periods in which the group ran
// (nr_periods), periods that ended with it throttled (nr_throttled), and
// periods that used burst (nr_bursts, burst_usec). Throttled time and
// pressure are not the pool's: the kernel sums throttled time per CPU, and
// pressure is the scheduler's, so they are filled by whoever has them (the
// kernel's file, the simulator's CPUs).
type Stat struct {
	Periods          uint64 `json:"nr_periods"`
	ThrottledPeriods uint64 `json:"nr_throttled"`
	ThrottledUsec    uint64 `json:"throttled_usec"`
	Bursts           uint64 `json:"nr_bursts"`
	BurstUsec        uint64 `json:"burst_usec"`
	// PressureSomeUsec is the time at least one of the group's runnable tasks
	// waited for a CPU; PressureFullUsec the time all of them did (cgroup v2
	// cpu.pressure "total=", 0 where there is none).
	PressureSomeUsec uint64 `json:"pressure_some_usec,omitempty"`
	PressureFullUsec uint64 `json:"pressure_full_usec,omitempty"`
}

// Sub returns s - o, field by field: what happened between two readings.
func (s Stat) Sub(o Stat) Stat {
	return Stat{s.Periods - o.Periods, s.ThrottledPeriods - o.ThrottledPeriods, s.ThrottledUsec - o.ThrottledUsec, s.Bursts - o.Bursts, s.BurstUsec - o.BurstUsec,
		s.PressureSomeUsec - o.PressureSomeUsec, s.PressureFullUsec - o.PressureFullUsec}
}

// Add returns s + o, field by field: several groups' counters together.
func (s Stat) Add(o Stat) Stat {
	return Stat{s.Periods + o.Periods, s.ThrottledPeriods + o.ThrottledPeriods, s.ThrottledUsec + o.ThrottledUsec, s.Bursts + o.Bursts, s.BurstUsec + o.BurstUsec,
		s.PressureSomeUsec + o.PressureSomeUsec, s.PressureFullUsec + o.PressureFullUsec}
}

// Bandwidth is the kernel's per-group bandwidth pool (struct cfs_bandwidth):
// a quota of CPU time refilled every period, unused quota carried over as
// burst up to Quota+Burst, and the counters cpu.stat shows. It is the one
// quota model of throttlelab: the simulator's groups run it inside their
// multi-core machine, and Replay runs recorded demand through it.
//
// Bandwidth only keeps the pool and its counters; who takes runtime from it,
// and when a period ends, is the caller's business: call Start when the group
// needs runtime, Take for runtime handed out, and Refill at each tick of the
// period timer the caller runs.
type Bandwidth struct {
	// Quota, Period and Burst; Quota 0 means no limit.
	Quota, Period, Burst time.Duration
	// Pool is the runtime left this period, in ns (cfs_b->runtime).
	Pool float64
	// Stat counts periods, throttled periods and bursts as cpu.stat does;
	// its throttled time is the caller's (the kernel sums it per CPU).
	Stat Stat

	snap   float64 // Pool at the last refill (runtime_snap)
	active bool    // the period timer runs
	idle   bool    // no runtime taken since the last refill
}

// NewBandwidth returns a full pool with the timer stopped, as a group is
// when its quota is set.
func NewBandwidth(quota, period, burst time.Duration) Bandwidth {
	b := Bandwidth{Quota: quota, Period: period, Burst: burst}
	if b.Limited() {
		b.Pool, b.snap = float64(quota), float64(quota)
	}
	return b
}

// Limited reports whether there is a quota at all.
func (b *Bandwidth) Limited() bool { return b.Quota > 0 }

// Start starts the period timer if it was stopped (start_cfs_bandwidth) and
// reports whether it did: the caller then schedules the next Refill at the
// next tick of the group's period grid (the timer keeps its phase).
func (b *Bandwidth) Start() bool {
	if b.active {
		return false
	}
	b.active = true
	return true
}

// Running reports whether the period timer runs: a caller that drives the
// timer calls Refill at a tick only then.
func (b *Bandwidth) Running() bool { return b.active }

// NextTick returns the first tick of the period grid with the given phase
// strictly after now (at phase itself if now is before it).
func (b *Bandwidth) NextTick(now, phase time.Duration) time.Duration {
	if now < phase {
		return phase
	}
	return phase + ((now-phase)/b.Period+1)*b.Period
}

// Take hands amt ns of runtime out of the pool (assign_cfs_rq_runtime); the
// group is no longer idle this period.
func (b *Bandwidth) Take(amt float64) {
	b.Pool -= amt
	b.idle = false
}

// Used marks the group as having used runtime this period without taking
// more from the pool (runtime a CPU already held).
func (b *Bandwidth) Used() { b.idle = false }

// Refill is the period timer (do_sched_cfs_period_timer): it counts the
// period, refills the pool carrying unused runtime over up to Quota+Burst,
// counts a burst when the period used more than its quota, and counts the
// period throttled if throttled (some CPU of the group waits for runtime).
// It reports whether the timer runs on: it stops after a period in which the
// group took nothing and was not throttled, so nr_periods counts only periods
// in which the group ran (and the one idle period that stops the timer).
func (b *Bandwidth) Refill(throttled bool) bool {
	b.Stat.Periods++
	// __refill_cfs_bandwidth_runtime
	b.Pool += float64(b.Quota)
	if used := b.snap - b.Pool; used > 0 {
		b.Stat.BurstUsec += uint64(used / 1e3)
		b.Stat.Bursts++
	}
	b.Pool = min(b.Pool, float64(b.Quota+b.Burst))
	b.snap = b.Pool
	if b.idle && !throttled {
		b.active = false
		return false
	}
	if !throttled {
		b.idle = true
		return true
	}
	b.Stat.ThrottledPeriods++
	// The kernel keeps the timer for the period after an unthrottle: a
	// throttled group is never idle.
	b.idle = false
	return true
}
