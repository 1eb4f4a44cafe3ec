package advise

import (
	"math"
	"math/bits"
	"time"

	"github.com/throttlelab/throttlelab/sim"
)

// The replay is a fluid model of a group under a CFS quota. The samples give
// the work the group asked for: between two samples it arrives at a constant
// rate. Work is served as it arrives while the pool (sim.Bandwidth, the
// simulator's own model of the kernel's cfs_bandwidth) has runtime; work that
// finds the pool dry waits, and the group is throttled, until the period
// timer refills it; waiting work then catches up on at most Cores CPUs, in
// arrival order. What it ignores: the kernel hands runtime to CPUs in 5 ms
// slices, so on several CPUs a group can be throttled while another CPU
// still holds runtime (the replay shares the pool perfectly, so it errs
// towards less throttling there); and work that waits may change what the
// group asks for next (a closed loop asks for less; the replay keeps the
// recorded demand). With wallClock set the demand is bound to wall-clock
// time instead (a worker that spins until a deadline, a poll loop): work that
// finds the pool dry is lost, not delayed, and the group stays throttled
// until the refill.

// eps is the runtime or backlog (ns) below which the replay counts none.
const eps = 1.0

// periodSlices is the demand cut at the ticks of one period grid: for
// period k (from tick k to tick k+1) the work arriving in it, and the first
// sample that ends after its start.
type periodSlices struct {
	start   time.Duration // time of the first tick (may be before 0)
	period  time.Duration
	work    []float64 // ns of work arriving in each period
	firstIx []int32   // index i of the first sample with At[i] > tick k
}

// slice cuts d at the ticks phase + k*period.
func slice(d *Demand, period, phase time.Duration) *periodSlices {
	start := phase - period // the first period holds time 0
	if phase == 0 {
		start = 0
	}
	end := d.At[len(d.At)-1]
	n := int((end-start)/period) + 1
	ps := &periodSlices{start: start, period: period, work: make([]float64, n), firstIx: make([]int32, n+1)}
	i := 1
	for k := 0; k < n; k++ {
		tick := start + time.Duration(k)*period
		for i < len(d.At) && d.At[i] <= tick {
			i++
		}
		ps.firstIx[k] = int32(i)
	}
	ps.firstIx[n] = int32(len(d.At))
	// Cumulative usage at each tick, by interpolation inside its sample.
	at := func(t time.Duration, i int) float64 { // At[i-1] <= t <= At[i]
		if t <= 0 {
			return float64(d.Usage[0])
		}
		if i >= len(d.At) {
			return float64(d.Usage[len(d.Usage)-1])
		}
		a, b := d.At[i-1], d.At[i]
		ua, ub := float64(d.Usage[i-1]), float64(d.Usage[i])
		return ua + (ub-ua)*float64(t-a)/float64(b-a)
	}
	prev := at(start, int(ps.firstIx[0]))
	for k := 0; k < n; k++ {
		next := at(start+time.Duration(k+1)*period, int(ps.firstIx[k+1]))
		ps.work[k] = next - prev
		prev = next
	}
	return ps
}

// phaseResult is what one replay at one phase counted.
type phaseResult struct {
	stat        sim.Bandwidth // its Stat holds periods, throttled periods and bursts
	throttledNs float64       // throttled time summed over the CPUs that waited
	lostNs      float64       // work lost while throttled (wallClock only)
	hist        *delayHist    // added delay, weighted by work
}

// chunk is work that arrived over one sample (or the part of it in one
// period) and is not served yet: mid is the middle of its arrival, a the
// cumulative arrival up to its end, w its size. Its delay is its middle's.
type chunk struct {
	mid  float64
	a, w float64
}

// replay runs the demand through one quota at one phase. scratch, if not
// nil, lends the queue's storage (a worker's, reused from replay to replay)
// and gets it back grown.
func replay(d *Demand, ps *periodSlices, quota, burst time.Duration, cores float64, wallClock bool, hist *delayHist, scratch *[]chunk) phaseResult {
	bw := sim.NewBandwidth(quota, ps.period, burst)
	var (
		res      = phaseResult{hist: hist}
		backlog  float64 // work waiting (ns)
		arrived  float64 // cumulative work arrived
		served   float64 // cumulative work served
		queue    []chunk // work waiting, oldest first (from qh)
		qh       int     // head of queue
		lastTick = len(ps.work)
		served0  float64 // work served on arrival by the fast path
		denied   bool    // wallClock: work found the pool dry this period
	)
	if scratch != nil {
		queue = (*scratch)[:0]
		defer func() { *scratch = queue[:0] }()
	}
	take := func(amt float64) {
		if amt <= 0 {
			return
		}
		bw.Start()
		bw.Take(amt)
	}
	// serveQueue records the delay of chunks the service passed: service ran
	// at rate s from cumulative s0 at time t0.
	serveQueue := func(t0, s0, s float64) {
		for qh < len(queue) && queue[qh].a <= served+eps {
			c := queue[qh]
			dep := c.mid // caught up: served as it arrived
			if s > 0 {
				dep = t0 + (c.a-c.w/2-s0)/s
			}
			hist.add(max(dep-c.mid, 0), c.w)
			qh++
		}
		if qh == len(queue) {
			queue, qh = queue[:0], 0
		}
	}
	for k := 0; k < lastTick; k++ {
		tick0 := ps.start + time.Duration(k)*ps.period
		tick1 := tick0 + ps.period
		w := ps.work[k]
		if backlog <= eps && w <= bw.Pool-eps {
			// Nothing waits and the pool covers the period: all of it is
			// served on arrival.
			take(w)
			arrived += w
			served = arrived
			served0 += w
		} else {
			// Walk the samples inside this period, in time from its start
			// (small numbers keep float steps exact).
			base := float64(tick0)
			for i := int(ps.firstIx[k]); i <= int(ps.firstIx[k+1]) && i < len(d.At); i++ {
				a := max(d.At[i-1], tick0, 0)
				b := min(d.At[i], tick1)
				if b <= a {
					continue
				}
				r := float64(d.Usage[i]-d.Usage[i-1]) / float64(d.At[i]-d.At[i-1]) // cores
				t, tb := float64(a-tick0), float64(b-tick0)
				lost0 := res.lostNs
				for t < tb {
					var dt float64
					switch {
					case bw.Pool <= eps && wallClock:
						// Dry: arrivals are lost; the group stays
						// throttled until the refill.
						dt = tb - t
						if r*dt > 0 {
							res.lostNs += r * dt
							denied = true
							res.throttledNs += dt * min(cores, max(1, math.Ceil(r-1e-9)))
						}
					case bw.Pool <= eps:
						// Dry: arrivals wait for the refill.
						dt = tb - t
						backlog += r * dt
						arrived += r * dt
						if backlog > eps {
							res.throttledNs += dt * min(cores, max(1, math.Ceil(r-1e-9)))
						}
					case backlog > eps || (d.Arrivals && r > cores):
						// Waiting work catches up on up to cores CPUs;
						// moved work that arrives faster waits too.
						s := max(cores, r)
						if d.Arrivals {
							s = cores
						}
						dt = tb - t
						if s > r {
							dt = min(dt, backlog/(s-r))
						}
						dt = min(dt, bw.Pool/s)
						s0 := served
						take(s * dt)
						served += s * dt
						arrived += r * dt
						backlog -= (s - r) * dt
						if backlog <= eps {
							backlog, served = 0, arrived
						}
						serveQueue(base+t, s0, s)
					case r <= 0:
						dt = tb - t
					default:
						dt = min(tb-t, bw.Pool/r)
						take(r * dt)
						served += r * dt
						arrived += r * dt
					}
					if t+dt <= t { // a step below float resolution: end the segment
						dt = tb - t
					}
					t += dt
				}
				if wallClock { // nothing waits: what ran, ran on arrival
					hist.add(0, r*float64(b-a)-(res.lostNs-lost0))
					continue
				}
				queue = append(queue, chunk{mid: float64(a+b) / 2, a: arrived, w: r * float64(b-a)})
				serveQueue(base+tb, served, 0)
			}
		}
		if bw.Running() {
			bw.Refill(bw.Pool <= eps && (backlog > eps || denied))
		}
		denied = false
	}
	// Work still waiting at the end waited at least until then.
	end := float64(d.At[len(d.At)-1])
	for ; qh < len(queue); qh++ {
		hist.add(max(end-queue[qh].mid, 0), queue[qh].w)
	}
	hist.add(0, served0)
	res.stat = bw
	return res
}

// delayHist is a histogram of delays weighted by work: 64 linear buckets of
// 1 us, then 32 per power of two (3% resolution), up to 2^40 us.
type delayHist struct {
	w     [64 + 35*32]float64
	total float64
	maxNs float64
}

func bucketOf(ns float64) int {
	v := uint64(ns / 1e3)
	if v < 64 {
		return int(v)
	}
	s := bits.Len64(v) - 6
	if s > 35 {
		return len(delayHist{}.w) - 1
	}
	return 64 + (s-1)*32 + int(v>>s) - 32
}

// bucketMid returns the middle of bucket i, in ns.
func bucketMid(i int) float64 {
	if i < 64 {
		if i == 0 {
			return 0
		}
		return (float64(i) + 0.5) * 1e3
	}
	s := (i-64)/32 + 1
	m := uint64((i-64)%32 + 32)
	lo := float64(m << s)
	return (lo + float64(uint64(1)<<s)/2) * 1e3
}

func (h *delayHist) add(ns, w float64) {
	if w <= 0 {
		return
	}
	h.w[bucketOf(ns)] += w
	h.total += w
	h.maxNs = max(h.maxNs, ns)
}

func (h *delayHist) merge(o *delayHist) {
	for i, v := range o.w {
		h.w[i] += v
	}
	h.total += o.total
	h.maxNs = max(h.maxNs, o.maxNs)
}

// quantile returns the delay (ns) that a share q of the work waited no
// longer than.
func (h *delayHist) quantile(q float64) float64 {
	if h.total <= 0 {
		return 0
	}
	need, acc := q*h.total, 0.0
	for i, v := range h.w {
		acc += v
		if acc >= need && v > 0 {
			return min(bucketMid(i), h.maxNs)
		}
	}
	return h.maxNs
}
