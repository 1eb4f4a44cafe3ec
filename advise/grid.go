package advise

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/units"
)

// Point is one setting to evaluate: a limit and a burst in millicores (as
// Kubernetes writes a limit; the burst is the extra runtime per period, in
// the same unit) and a period.
type Point struct {
	LimitMilli int64
	BurstMilli int64
	Period     time.Duration
}

// Quota is the CFS quota the kubelet sets for the limit (limit x period,
// rounded down to a microsecond, at least 1 ms).
func (p Point) Quota() time.Duration {
	return time.Duration(cfs.MilliCPUToQuota(p.LimitMilli, uint64(p.Period/time.Microsecond))) * time.Microsecond
}

// Burst is the burst runtime per period (cpu.max.burst), rounded down to a
// microsecond.
func (p Point) Burst() time.Duration {
	if p.BurstMilli <= 0 {
		return 0
	}
	return time.Duration(p.BurstMilli*int64(p.Period/time.Microsecond)/1000) * time.Microsecond
}

func (p Point) String() string {
	s := units.FormatMilliCPU(p.LimitMilli)
	if p.BurstMilli > 0 {
		s += "+" + units.FormatMilliCPU(p.BurstMilli) + " burst"
	}
	if p.Period != 100*time.Millisecond {
		s += " /" + p.Period.String()
	}
	return s
}

// Errors of a point the kernel would refuse.
var (
	ErrQuotaTooSmall = errors.New("quota under 1 ms")
	ErrBurstTooLarge = errors.New("burst above the quota")
)

// Check refuses a point the kernel or the kubelet would not set up as
// asked: a quota under 1 ms (the kubelet raises it to 1 ms, the kernel
// refuses less), a burst above the quota (mainline refuses it with EINVAL),
// a period outside 1 ms..1 s.
func (p Point) Check() error {
	if p.Period < time.Millisecond || p.Period > time.Second {
		return fmt.Errorf("period %s: the kernel takes 1ms to 1s", p.Period)
	}
	if p.LimitMilli <= 0 || p.LimitMilli > units.MaxMilliCPU {
		return fmt.Errorf("limit %dm: give 1m to %dm", p.LimitMilli, units.MaxMilliCPU)
	}
	if exact := float64(p.LimitMilli) * float64(p.Period) / 1000; exact < float64(time.Millisecond) {
		return fmt.Errorf("limit %s with a %s period is a quota of %s: %w (the kubelet sets 1ms, which is %s): give at least %s",
			units.FormatMilliCPU(p.LimitMilli), p.Period, time.Duration(exact), ErrQuotaTooSmall,
			units.FormatMilliCPU(int64(float64(time.Millisecond)*1000/float64(p.Period))), units.FormatMilliCPU(int64(math.Ceil(float64(time.Millisecond)*1000/float64(p.Period)))))
	}
	if p.BurstMilli < 0 || p.Burst() > p.Quota() {
		return fmt.Errorf("burst %s with limit %s: %w (the kernel refuses it with EINVAL): give at most %s",
			units.FormatMilliCPU(p.BurstMilli), units.FormatMilliCPU(p.LimitMilli), ErrBurstTooLarge, units.FormatMilliCPU(p.LimitMilli))
	}
	return nil
}

// Evaluation is what the replay predicts for one point, over every phase
// of the period against the samples. Ratios and times are means over the
// phases (what a group whose period starts at an unknown moment should
// expect); the worst phase's throttled share is given beside.
type Evaluation struct {
	LimitMilli int64 `json:"limit_millicores"`
	BurstMilli int64 `json:"burst_millicores"`
	PeriodUsec int64 `json:"period_us"`
	QuotaUsec  int64 `json:"quota_us"`
	BurstUsec  int64 `json:"burst_us"`
	// ThrottledRatio is nr_throttled / nr_periods, pooled over the phases.
	ThrottledRatio float64 `json:"throttled_periods_ratio"`
	// ThrottledRatioWorst is the highest throttled share of any one phase.
	ThrottledRatioWorst float64 `json:"throttled_periods_ratio_worst_phase"`
	// ThrottledRatioBest is the lowest throttled share of any one phase.
	ThrottledRatioBest float64 `json:"throttled_periods_ratio_best_phase"`
	// ThrottledSeconds is throttled time (summed over the CPUs that waited,
	// like the kernel's throttled_usec), mean over the phases.
	ThrottledSeconds float64 `json:"throttled_seconds"`
	// Periods, ThrottledPeriods and Bursts are means over the phases.
	Periods          float64 `json:"nr_periods"`
	ThrottledPeriods float64 `json:"nr_throttled"`
	Bursts           float64 `json:"nr_bursts"`
	// LostSeconds is the work lost while throttled (Options.WallClock
	// only), mean over the phases.
	LostSeconds float64 `json:"lost_work_seconds,omitempty"`
	// Added delay of the work (each ns of CPU weighs alike), all phases pooled.
	DelayP50Ms float64 `json:"added_delay_p50_ms"`
	DelayP99Ms float64 `json:"added_delay_p99_ms"`
	DelayMaxMs float64 `json:"added_delay_max_ms"`
	// ThrottledRatioRange and DelayP99MsRange are the intervals Advise
	// gives: the spread of the estimates over the window's time blocks
	// (widened where the data cannot give one; see Window). nil from
	// Evaluate alone.
	ThrottledRatioRange *Range `json:"throttled_periods_ratio_range,omitempty"`
	DelayP99MsRange     *Range `json:"added_delay_p99_ms_range,omitempty"`
	// ThrottledRatioSliceBound is the throttled share with the runtime
	// other CPUs' 5 ms slices can hold taken out of the quota (SliceSlack):
	// the most the kernel's per-CPU slices can add to the fluid replay. Set
	// by Advise for a group that runs on more than one CPU and whose
	// samples carry no per-CPU split (with the split the slice replay models
	// the slices instead); the interval's upper end includes it.
	ThrottledRatioSliceBound *float64 `json:"throttled_periods_ratio_slice_bound,omitempty"`
	// CountsOnly marks an evaluation with its periods and throttled periods
	// counted (Options.Full) but not replayed: throttled time, bursts and
	// delays are not given.
	CountsOnly bool `json:"counts_only,omitempty"`
	// Saturated marks a point whose limit is below the window's mean use:
	// work waits without end, its delays grow with the window's length and
	// mean nothing as quantiles, so it is counted (CountsOnly), not
	// replayed, and meets no delay budget.
	Saturated bool `json:"saturated,omitempty"`
	// DelayUnbounded marks a delay interval with no upper end: in a window
	// the interval spans (a block, the use LevelSpread higher, the slice
	// bound) the limit is below that window's mean use. DelayP99MsRange is
	// then nil.
	DelayUnbounded bool `json:"added_delay_p99_ms_unbounded,omitempty"`
	// Phases is set where the means are over fewer phases than asked, by
	// need (see Evaluate): the two phases replayed, which agreed within
	// PhaseShareBound at every point of the window and within
	// PhaseDelayBound at this one.
	// The worst and best phase are then of those two. 0: over every phase
	// (Sampled.Phases).
	Phases int `json:"phases,omitempty"`
}

// saturated reports whether p's quota (as o replays it) is below d's mean
// use: the work waiting grows without end. Demand bound to wall-clock time
// is lost rather than queued, so it never saturates.
func saturated(d *Demand, p Point, o Options) bool {
	if o.WallClock {
		return false
	}
	return float64(o.quota(p, d.Bound()))/float64(p.Period) < d.MeanCores()
}

// Point returns the point evaluated.
func (e Evaluation) Point() Point {
	return Point{LimitMilli: e.LimitMilli, BurstMilli: e.BurstMilli, Period: time.Duration(e.PeriodUsec) * time.Microsecond}
}

// Options tune Evaluate.
type Options struct {
	// Phases is how many phases of each period are replayed: exactly
	// these when given; 0 is DefaultPhases, or phases by need on a long
	// window (see Evaluate).
	Phases int
	// Workers is how many phases run at once (default GOMAXPROCS).
	Workers int
	// WallClock replays demand bound to wall-clock time (a worker that
	// spins until a deadline, a poll loop, a frame loop): work that finds
	// the quota spent is lost rather than delayed. The default is work that
	// waits (requests, jobs): it is served late, in order.
	WallClock bool
	// Delays, if set, gets each point's delay histogram pooled over the
	// phases, for a caller that keeps more of the distribution than the
	// Evaluation's p50, p99 and max (the agent merges many replays'); it
	// must not keep h, which is reused.
	Delays func(i int, h *cfs.DelayHist)

	// Full, if set, picks the points that get the full replay (throttled
	// time, bursts, delays) from their counts: each point's throttled
	// periods are first counted at every phase in one pass over the period
	// sums (cfs.CountLadder), and Full sees an Evaluation with only the
	// counts and ratios set. The others keep those and are marked
	// CountsOnly. Full is called in order of the points, from Evaluate's own
	// goroutine. nil: every point is replayed. A point whose count the one
	// pass cannot take exactly at some phase is replayed at that phase for
	// its counts (cfs.Count.Exact); every point of demand replayed with
	// per-CPU slices (a split over several CPUs) or bound to wall-clock
	// time (WallClock), which the one pass does not model, is replayed in
	// full whatever Full says.
	Full func(i int, counts Evaluation) bool

	// stranded replays the quota less the runtime other CPUs can hold in
	// their slices (see SliceSlack): the slice bound.
	stranded bool
	// before takes the path as it was before the windows ran at once and
	// the counts' replays kept no delays: the benchmarks' reference, in the
	// same run (export_test.go).
	before bool
	// memo is what the evaluations of Advise's windows share from call to
	// call (nil: each call its own).
	memo *memo
	// kneeSpan is the longest window whose knee Advise refines (0:
	// KneeRefineSpan; tests shorten it); gridKnee reads every knee off the
	// grid alone (the benchmark's reference: the knee's cost).
	kneeSpan time.Duration
	gridKnee bool
}

// kneeRefineSpan is the longest window whose knee Advise refines.
func (o Options) kneeRefineSpan() time.Duration {
	if o.kneeSpan > 0 {
		return o.kneeSpan
	}
	return KneeRefineSpan
}

// kneeRounds is how many rounds refineKnee takes.
func (o Options) kneeRounds() int {
	if o.gridKnee {
		return 0
	}
	return maxKneeRounds
}

// quota is the quota p is replayed with.
func (o Options) quota(p Point, cores float64) time.Duration {
	if !o.stranded {
		return p.Quota()
	}
	return p.Quota() - cfs.SliceSlack(p.Quota(), cores)
}

// Phases by need: a long window is replayed first at two phases of ten, 0
// and 5 (the period's start and half a period later). Where a period
// boundary falls changes which periods throttle, but over thousands of
// periods the phases' shares differ only by noise; where the two agree
// (PhaseShareBound, PhaseDelayBound) the evaluation is their mean
// (Evaluation.Phases 2), else all ten are replayed as always: at every
// point where a share differs, at the point alone where only its delays do
// (see Evaluate).
const (
	// DefaultPhases is how many phases of the period are replayed when
	// Options.Phases is not given and phases by need do not apply.
	DefaultPhases = 10
	// ByNeedMinPeriods is the fewest periods (of the longest period
	// evaluated) a window needs before two phases may stand for ten. In a
	// shorter one a period moves a phase's share by more than 1/3000, so
	// two phases rarely agree within PhaseShareBound, and replaying ten
	// costs little (5 minutes of samples at 100 ms).
	ByNeedMinPeriods = 3000
	// PhaseShareBound is how far apart the two phases' throttled shares
	// may lie, at every point, for their mean to stand for ten phases: a
	// fourteenth of the smallest Tolerance, and under what the ten phases
	// themselves spread over an hour of 10 ms samples of busy demand
	// (cfstest.Day: 0.007).
	PhaseShareBound = 0.005
	// PhaseDelayBound is how far apart, relative to the larger, the two
	// phases' delay p99s may lie at a point replayed in full (about three
	// buckets of cfs.DelayHist) for their mean to stand for ten phases there.
	PhaseDelayBound = 0.10
)

// byNeedPhases are the phases, of DefaultPhases, replayed first.
var byNeedPhases = []int{0, DefaultPhases / 2}

// histPool and scratchPool lend Evaluate its delay histograms (one per
// point and phase) and its workers' queues from call to call:
// the agent replays every container's minute of samples through a hundred
// points, and allocating them anew was most of what it allocated
// (BenchmarkAgentDay200).
var (
	histPool    = sync.Pool{New: func() any { return new(cfs.DelayHist) }}
	scratchPool = sync.Pool{New: func() any { return new(cfs.Scratch) }}
)

// newHist returns an empty histogram from the pool.
func newHist() *cfs.DelayHist {
	h := histPool.Get().(*cfs.DelayHist)
	*h = cfs.DelayHist{}
	return h
}
