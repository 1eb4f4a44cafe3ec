package cfs

import (
	"math"
	"time"
)

// The slice replay is the quota model with the kernel's per-CPU runtime
// (struct cfs_rq's runtime_remaining): each CPU the group runs on takes
// runtime from the group's pool in slices of up to Slice
// (assign_cfs_rq_runtime tops it up to a slice), runs its share of the
// demand on it, and is throttled alone when its runtime is spent and the
// pool is dry, while other CPUs run on what they hold. A CPU whose group
// goes idle on it hands back all but minCFSRuntime (return_cfs_rq_runtime);
// runtime handed back above a slice unthrottles the waiting CPUs (the slack
// timer), and the period timer refills the pool and unthrottles them all.
// A period counts as throttled when a CPU is throttled at its end, as
// do_sched_cfs_period_timer counts it. Each CPU runs the share of each
// sample interval that the per-CPU counters gave it (Demand.PerCPU); work a
// throttled CPU could not run waits and catches up on that CPU at a full
// CPU's rate. What it leaves out: the samples' 10 ms grain (a CPU that used
// less than idleBelow of an interval is taken to have gone idle at its
// end), the slack timer's 5 ms delay, and threads moving between CPUs
// within an interval.

// minCFSRuntime is the runtime a CPU keEps when its group goes idle on it
// (min_cfs_rq_runtime).
const minCFSRuntime = float64(time.Millisecond)

// idleBelow is the use of a CPU in a sample interval under which the group
// is taken to have gone idle on it in that interval.
const idleBelow = 0.9

// sliceState is the per-CPU state of one slice replay.
type sliceState struct {
	rt, back, r []float64 // runtime held, work waiting, arrival rate (cores)
	thr         []bool    // throttled
}

// ReplaySlices replays the demand ps was cut from through one quota and
// burst at ps's phase with per-CPU slices over the split sp (Demand.Split),
// and returns the counters and the throttled time summed over the throttled
// CPUs (ns). It counts throttling only: the delays are Replay's.
func (ps *Periods) ReplaySlices(quota, burst time.Duration, sp *Split) (Stat, float64) {
	d := ps.d
	bw := NewBandwidth(quota, ps.Period, burst)
	n := sp.N
	st := sliceState{rt: make([]float64, n), back: make([]float64, n), r: make([]float64, n), thr: make([]bool, n)}
	slice := float64(Slice)
	// serve is the rate a CPU with work waiting runs it at: one CPU, or
	// faster where use as sampled came faster (a late reading: such use
	// ran, it never waited). Arrivals (Demand.Arrivals: work Reconstruct
	// moved to a streak's start) arrive faster than the CPU can run them:
	// above ceil they wait on that CPU and catch up at one CPU's rate, as
	// the thread that ran them did.
	ceil := math.Inf(1)
	serve := func(r float64) float64 { return max(1, r) }
	if d.Arrivals {
		ceil = 1
		serve = func(float64) float64 { return 1 }
	}
	// held is what CPU c tops its runtime up to. A CPU busy through the
	// interval (or catching up) holds a whole slice. One busy for a share
	// r of it runs in short stretches: it takes a slice at each, and
	// going idle after each hands back all but minCFSRuntime at once
	// (return_cfs_rq_runtime on dequeue), so over the interval it holds
	// minCFSRuntime, and a slice only while it runs: on average
	// minCFSRuntime + r x (Slice - minCFSRuntime). Holding a whole slice
	// through the interval, as a 10 ms sample cannot tell apart, locked
	// runtime the kernel hands back within it: on real programs whose
	// CPUs were each busy a small share of the time it counted about
	// twice the kernel's throttled periods at the knee (docs/advise.md).
	held := func(c int) float64 {
		if st.back[c] > Eps || st.r[c] >= 1 {
			return slice
		}
		return minCFSRuntime + st.r[c]*(slice-minCFSRuntime)
	}
	var thrNs float64
	unthrottle := func() {
		for c := range st.thr {
			st.thr[c] = false
		}
	}
	for k := range ps.Work {
		tick0 := ps.Start + time.Duration(k)*ps.Period
		tick1 := tick0 + ps.Period
		for i, last := ps.firstIx.at(k), ps.firstIx.at(k+1); i <= last && i < len(d.At); i++ {
			a := max(d.at(i-1), tick0, 0)
			b := min(d.at(i), tick1)
			if b <= a {
				continue
			}
			rate := float64(d.du(i)) / float64(d.At[i]-d.At[i-1])
			for c := range n {
				st.r[c] = rate * sp.share[i*n+c]
			}
			t, tb := 0.0, float64(b-a)
			for t < tb {
				// A CPU with work and no runtime takes a slice, or is
				// throttled when the pool is dry.
				for c := range n {
					if st.thr[c] || st.rt[c] > Eps || (st.r[c] <= 0 && st.back[c] <= Eps) {
						continue
					}
					if bw.Pool > Eps {
						amt := min(held(c)-st.rt[c], bw.Pool)
						bw.Start()
						bw.Take(amt)
						st.rt[c] += amt
					} else {
						st.thr[c] = true
					}
				}
				dt := tb - t
				for c := range n {
					switch {
					case st.thr[c]:
					case st.back[c] > Eps || st.r[c] > ceil:
						s := serve(st.r[c])
						dt = min(dt, st.rt[c]/s)
						if s > st.r[c] {
							dt = min(dt, st.back[c]/(s-st.r[c]))
						}
					case st.r[c] > 0:
						dt = min(dt, st.rt[c]/st.r[c])
					}
				}
				if t+dt <= t { // below float resolution: end the interval
					dt = tb - t
				}
				for c := range n {
					switch {
					case st.thr[c]:
						st.back[c] += st.r[c] * dt
						if st.back[c] > Eps {
							thrNs += dt
						}
					case st.back[c] > Eps || st.r[c] > ceil:
						s := serve(st.r[c])
						st.rt[c] -= s * dt
						st.back[c] = max(0, st.back[c]-(s-st.r[c])*dt)
						bw.Used()
					case st.r[c] > 0:
						st.rt[c] -= st.r[c] * dt
						bw.Used()
					}
					st.rt[c] = max(st.rt[c], 0)
				}
				t += dt
			}
			// CPUs the group went idle on hand back what they hold above
			// minCFSRuntime; enough of it unthrottles the others.
			returned := false
			for c := range n {
				if !st.thr[c] && st.back[c] <= Eps && st.r[c] < idleBelow && st.rt[c] > minCFSRuntime {
					bw.Pool += st.rt[c] - minCFSRuntime
					st.rt[c] = minCFSRuntime
					returned = true
				}
			}
			if returned && bw.Pool > slice {
				unthrottle()
			}
		}
		if bw.Running() {
			throttled := false
			for c := range n {
				throttled = throttled || st.thr[c]
			}
			bw.Refill(throttled)
			unthrottle()
		}
	}
	return bw.Stat, thrNs
}
