// Package cfstest is a test kernel for the quota model's tests: one thread
// asked for bursts of work, run under a CFS quota step by step as the
// kernel's bandwidth control would, and read every 10 ms.
package cfstest

import (
	"math"
	"math/rand/v2"
	"time"
)

// Sampled is what UnderQuota read every 10 ms: the times, the cumulative
// work that arrived (the true demand), the cumulative use the group ran, and
// its cumulative nr_throttled (counted at the refill).
type Sampled struct {
	At, Arrived, Used []time.Duration
	Throttled         []uint64
}

// UnderQuota runs, at steps of step for span, one thread asked for burst of
// work every every, first at offset, and background work of bg every 10 ms
// besides (a server's timers and probes), under quota per 100 ms period.
func UnderQuota(step, span, burst, every, offset, quota, bg time.Duration) Sampled {
	return UnderQuotaOn(Host{}, step, span, burst, every, offset, quota, bg)
}

// Host is what the rest of a loaded host does to the sampled group. The
// zero value is a quiet host.
type Host struct {
	// Late, if set, delays the read of the sample stamped n x 10 ms by
	// Late(n) (a multiple of the step): a sampler stamps its sweep's instant
	// and reads the group's files when it gets there, so a refill that came
	// in between shows in a sample stamped before it.
	Late func(n int) time.Duration
	// Held, if set, says whether another task holds the group's CPU at t:
	// the thread waits, throttled or not.
	Held func(t time.Duration) bool
}

// UnderQuotaOn is UnderQuota on host h.
func UnderQuotaOn(h Host, step, span, burst, every, offset, quota, bg time.Duration) Sampled {
	var s Sampled
	type count struct {
		u time.Duration
		n uint64
	}
	var trace []count // the group's counters at every step, for late reads
	var a, u, backlog, runtime time.Duration
	var n uint64
	throttledNow := false
	for t := time.Duration(0); t <= span; t += step {
		if t%(100*time.Millisecond) == 0 {
			// The period timer counts a throttled group when it refills it
			// (do_sched_cfs_period_timer), not when it was throttled.
			if throttledNow {
				n++
			}
			runtime, throttledNow = quota, false
		}
		if t >= offset && (t-offset)%every == 0 {
			a += burst
			backlog += burst
		}
		if bg > 0 && t%(10*time.Millisecond) == 0 {
			a += bg
			backlog += bg
		}
		if t%(10*time.Millisecond) == 0 {
			s.At, s.Arrived, s.Used = append(s.At, t), append(s.Arrived, a), append(s.Used, u)
			s.Throttled = append(s.Throttled, n)
		}
		if h.Late != nil {
			trace = append(trace, count{u, n})
		}
		run := min(step, backlog, runtime)
		if h.Held != nil && h.Held(t) {
			run = 0
		}
		u, backlog, runtime = u+run, backlog-run, runtime-run
		if backlog > 0 && runtime == 0 {
			throttledNow = true
		}
	}
	if h.Late != nil {
		k := len(s.At)
		for i, at := range s.At {
			j := int((at + h.Late(i)) / step)
			if j >= len(trace) {
				k = i
				break
			}
			s.Used[i], s.Throttled[i] = trace[j].u, trace[j].n
		}
		s.At, s.Arrived, s.Used, s.Throttled = s.At[:k], s.Arrived[:k], s.Used[:k], s.Throttled[:k]
	}
	return s
}

// Day is n samples 10 ms apart (8.64 M make a day): a 5 ms burst starts in
// a sample with probability 0.6 over a trickle (about 0.3 cores), with
// timestamps jittered by up to 1 ms, as a live sampler records; the same
// for every call (a fixed seed). The benchmarks of a day's advice use it.
func Day(n int) (at, usage []time.Duration) {
	rng := rand.New(rand.NewPCG(1, 2))
	at, usage = make([]time.Duration, n), make([]time.Duration, n)
	var u time.Duration
	for i := 1; i < n; i++ {
		at[i] = time.Duration(i)*10*time.Millisecond + time.Duration(rng.IntN(1000))*time.Microsecond
		if rng.Float64() < 0.6 {
			u += 5 * time.Millisecond
		}
		u += time.Duration(rng.IntN(100)) * time.Microsecond
		usage[i] = u
	}
	return at, usage
}

// Curve samples a demand given as cores over time every 10 ms for span
// (each interval's use taken at its middle): the times and the cumulative
// use, for cfs.FromSamples.
func Curve(span time.Duration, cores func(t time.Duration) float64) (at, usage []time.Duration) {
	var u float64
	for t := time.Duration(0); t <= span; t += 10 * time.Millisecond {
		if t > 0 {
			u += cores(t-5*time.Millisecond) * float64(10*time.Millisecond)
		}
		at, usage = append(at, t), append(usage, time.Duration(math.Round(u)))
	}
	return at, usage
}

// Constant is c cores at every instant (Curve).
func Constant(c float64) func(time.Duration) float64 {
	return func(time.Duration) float64 { return c }
}
