package cfs

import (
	"math"
	"math/bits"
	"sync"
	"time"
)

// The replay is a fluid model of a group under a CFS quota. The samples give
// the work the group asked for: between two samples it arrives at a constant
// rate. Work is served as it arrives while the pool (Bandwidth, the
// simulator's own model of the kernel's cfs_bandwidth) has runtime; work that
// finds the pool dry waits, and the group is throttled, until the period
// timer refills it; waiting work then catches up on at most Cores CPUs, in
// arrival order. What it ignores: the kernel hands runtime to CPUs in 5 ms
// slices, so on several CPUs a group can be throttled while another CPU
// still holds runtime (the replay shares the pool perfectly, so it errs
// towards less throttling there); and work that waits may change what the
// group asks for next (a closed loop asks for less; the replay keeps the
// recorded demand). A sample above Cores is a late reading: its excess
// arrives after it, within its period (lateReading). With wallClock set the
// demand is bound to wall-clock time instead (a worker that spins until a
// deadline, a poll loop): work that finds the pool dry is lost, not delayed,
// and the group stays throttled until the refill.

// Eps is the runtime or backlog (ns) below which the replay counts none: a
// quota at least Eps above a period's work never throttles in it.
const Eps = 1.0

// Periods is a demand cut at the ticks of one period grid: for period k
// (from tick k to tick k+1) the work arriving in it, and the first sample
// that ends after its start. One cut serves the replays of every quota with
// that period and phase.
type Periods struct {
	// Start is the time of the first tick (before 0 when the phase is not 0).
	Start time.Duration
	// Period is the grid's period.
	Period time.Duration
	// Work is the work (ns) arriving in each period.
	Work    []float64
	d       *Demand
	firstIx sampleIx // index i of the first sample with At[i] > tick k
	// sharedIx: firstIx is another cut's (Along), not given back by
	// Recycle.
	sharedIx bool
	// blockSums sums whole blocks of periods for CountLadder (nil until
	// it needs them; made once, so that CountLadder and Replay can run on
	// one Periods at once).
	blockSums  []blockSums
	blocksOnce sync.Once
}

// Cut cuts d at the ticks phase + k*period. d must pass Check.
func Cut(d *Demand, period, phase time.Duration) *Periods {
	start := phase - period // the first period holds time 0
	if phase == 0 {
		start = 0
	}
	end := d.at(len(d.At) - 1)
	n := int((end-start)/period) + 1
	ps := &Periods{Start: start, Period: period, d: d}
	// Every element is written below: storage a cut gave back serves.
	if b, _ := cutBufs.Get().(*cutBuf); b != nil && cap(b.work) >= n {
		ps.Work, ps.firstIx = b.work[:n], newSampleIx(n, b.base, b.off)
	} else {
		ps.Work, ps.firstIx = make([]float64, n), newSampleIx(n, nil, nil)
	}
	i := 1
	for k := 0; k < n; k++ {
		tick := start + time.Duration(k)*period
		for i < len(d.At) && d.at(i) <= tick {
			i++
		}
		ps.firstIx.set(k, i)
	}
	ps.firstIx.set(n, len(d.At))
	ps.sumWork()
	return ps
}

// Along cuts d at ps's ticks (Cut). Where d's samples are at the times of
// ps's demand (the same At: a Scaled demand of it, as advise's level
// windows are) the cut shares ps's sample index, held once for both; ps
// must then not be Recycled while the cut is in use.
func (ps *Periods) Along(d *Demand) *Periods {
	src := ps.d
	if len(d.At) == 0 || len(d.At) != len(src.At) || &d.At[0] != &src.At[0] || d.origin != src.origin {
		phase := time.Duration(0)
		if ps.Start != 0 {
			phase = ps.Start + ps.Period // Cut's start is phase - period
		}
		return Cut(d, ps.Period, phase)
	}
	o := &Periods{Start: ps.Start, Period: ps.Period, Work: make([]float64, len(ps.Work)), d: d, firstIx: ps.firstIx, sharedIx: true}
	o.sumWork()
	return o
}

// sumWork sets each period's work from the demand's samples, its sample
// index made.
func (ps *Periods) sumWork() {
	d, start, period, n := ps.d, ps.Start, ps.Period, len(ps.Work)
	// Cumulative usage at each tick, by interpolation inside its sample.
	at := func(t time.Duration, i int) float64 { // At[i-1] <= t <= At[i]
		if t <= 0 {
			return float64(d.Usage[0])
		}
		if i >= len(d.At) {
			return float64(d.UsageAt(len(d.Usage) - 1))
		}
		a, b := d.at(i-1), d.at(i)
		ua, ub := float64(d.UsageAt(i-1)), float64(d.UsageAt(i))
		return ua + (ub-ua)*float64(t-a)/float64(b-a)
	}
	prev := at(start, ps.firstIx.at(0))
	for k := 0; k < n; k++ {
		next := at(start+time.Duration(k+1)*period, ps.firstIx.at(k+1))
		ps.Work[k] = next - prev
		prev = next
	}
}

// cutBuf is the storage of a Periods given back (Recycle) for the next
// Cut.
type cutBuf struct {
	work []float64
	base []int32
	off  []uint16
}

// cutBufs holds the storage of cuts given back.
var cutBufs sync.Pool

// Recycle gives ps's storage to a later Cut: a caller that cuts many
// windows at grids it uses once (advise's blocks at every phase) keeps
// the heap from growing by every one of them before the collector runs.
// ps must not be used after.
func (ps *Periods) Recycle() {
	if ps.Work != nil {
		b := &cutBuf{work: ps.Work}
		if !ps.sharedIx {
			b.base, b.off = ps.firstIx.base, ps.firstIx.off
		}
		cutBufs.Put(b)
	}
	ps.Work, ps.firstIx, ps.blockSums = nil, sampleIx{}, nil
}

// Result is what one replay at one phase counted.
type Result struct {
	// Stat counts periods, throttled periods and bursts.
	Stat Stat
	// ThrottledNs is throttled time summed over the CPUs that waited (the
	// kernel's throttled_usec, in ns).
	ThrottledNs float64
	// LostNs is the work lost while throttled (Setting.WallClock only).
	LostNs float64
	// Hist is the histogram the replay added the work's delays to.
	Hist *DelayHist
}

// Setting is the quota a demand is replayed through and how the demand
// behaves under it.
type Setting struct {
	// Quota and Burst are the runtime per period and the burst above it
	// (cpu.max and cpu.max.burst); Quota must be positive.
	Quota, Burst time.Duration
	// Cores is how many CPUs waiting work catches up on (Demand.Bound).
	Cores float64
	// WallClock replays demand bound to wall-clock time: work that finds
	// the pool dry is lost, not delayed.
	WallClock bool
}

// waitingCPUs is how many CPUs wait while work arriving at r cores finds
// the pool dry: r rounded up, at least 1, at most cores. The same as
// min(cores, max(1, math.Ceil(r-1e-9))) for every r and cores a replay
// meets (neither is NaN), without the builtins' NaN and signed-zero cases,
// which cost the replay's walk a few percent where work waits in most
// periods.
func waitingCPUs(r, cores float64) float64 {
	n := math.Ceil(r - 1e-9)
	if n < 1 {
		n = 1
	}
	if n > cores {
		n = cores
	}
	return n
}

// floor0, smaller and larger are max(x, 0), min(a, b) and max(a, b) for
// the replay's walk, whose values are never NaN: plain comparisons,
// without the builtins' NaN and signed-zero cases (a few percent of a walk
// where work waits in most periods). A -0 floor0 keeps is a delay of 0 to
// the histogram all the same; smaller and larger meet no zeros of both
// signs (their arguments are spans and rates above 0, or a backlog and a
// span of which the span is above 0).
func floor0(x float64) float64 {
	if x < 0 {
		return 0
	}
	return x
}

func smaller(a, b float64) float64 {
	if b < a {
		return b
	}
	return a
}

func larger(a, b float64) float64 {
	if b > a {
		return b
	}
	return a
}

// lateReading returns the rate (cores) at which the work of a piece of a
// sample, l ns long and read at r cores, arrives in the replay, and the work
// (ns) still to arrive after it, given late, the work of earlier late
// readings in the same period not arrived yet. Use above the group's
// parallelism bound (cores) is a late reading: the sampler reads after its
// instant, never before, so a sample that holds more than the group can run
// in its interval holds work done after the instant it is stamped with.
// That work arrives after the piece, at most at the bound, and by the end
// of the period: the period's sum stays the counters' own (each period
// replays with the work its readings give it, so whether it throttles is
// unchanged), and the last piece of a period takes what is left. Served as
// read, faster than the group can run, a late reading would be served
// before work the group did earlier and make delays that no spread of the
// period's work within the bound has (docs/fleet.md).
func lateReading(r, late, l, cores float64, last bool) (float64, float64) {
	if late <= 0 && (r <= cores || last) {
		return r, 0
	}
	have := r*l + late
	if last || have <= cores*l {
		return have / l, 0
	}
	return cores, have - cores*l
}

// DelayHist is a histogram of delays weighted by work: 64 linear buckets of
// 1 us, then 32 per power of two (3% resolution), up to 2^40 us. Its zero
// value is empty.
type DelayHist struct {
	w     [64 + 35*32]float64
	total float64
	maxNs float64
}

func bucketOf(ns float64) int {
	v := uint64(int64(ns / 1e3)) // as uint64(ns/1e3) for every delay (ns >= 0), without its test for 2^63 and more
	if v < 64 {
		return int(v)
	}
	s := bits.Len64(v) - 6
	if s > 35 {
		return len(DelayHist{}.w) - 1
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

// Add counts w of work (ns) delayed by ns.
func (h *DelayHist) Add(ns, w float64) {
	if w <= 0 {
		return
	}
	h.w[bucketOf(ns)] += w
	h.total += w
	if ns > h.maxNs { // max(h.maxNs, ns) for a delay (never NaN), without its NaN case
		h.maxNs = ns
	}
}

// Merge adds o's counts to h.
func (h *DelayHist) Merge(o *DelayHist) {
	for i, v := range o.w {
		h.w[i] += v
	}
	h.total += o.total
	h.maxNs = max(h.maxNs, o.maxNs)
}

// Quantile returns the delay (ns) that a share q of the work waited no
// longer than.
func (h *DelayHist) Quantile(q float64) float64 {
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

// Max returns the longest delay added (ns).
func (h *DelayHist) Max() float64 { return h.maxNs }

// ZeroShare returns the share of the work that waited under 1 us (1 when
// the histogram is empty).
func (h *DelayHist) ZeroShare() float64 {
	if h.total <= 0 {
		return 1
	}
	return h.w[0] / h.total
}
