package advise

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/cgroup"
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
	return time.Duration(cgroup.MilliCPUToQuota(p.LimitMilli, uint64(p.Period/time.Microsecond))) * time.Microsecond
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
	// PhaseShareBound and PhaseDelayBound at every point of the window.
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
// periods the phases' shares differ only by noise; where the two agree at
// every point (PhaseShareBound, PhaseDelayBound) the evaluation is their
// mean (Evaluation.Phases 2), else all ten are replayed as always.
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
	// phases' delay p99s may lie at every point replayed in full (about
	// three buckets of cfs.DelayHist).
	PhaseDelayBound = 0.10
)

// byNeedPhases are the phases, of DefaultPhases, replayed first.
var byNeedPhases = []int{0, DefaultPhases / 2}

// Evaluate replays d through every point at every phase. Points must pass
// Check. The result is in the order of points and does not depend on
// Workers.
//
// With Options.Phases 0 (and no Delays callback), a window of
// ByNeedMinPeriods periods or more takes phases by need: two phases
// first, and all DefaultPhases only where the two differ at some point by
// PhaseShareBound or more in throttled share, or by PhaseDelayBound or
// more in delay p99; Full is then called again for the ten. Options.Phases
// N replays exactly N phases.
func Evaluate(d *Demand, points []Point, o Options) ([]Evaluation, error) {
	if o.Phases > 0 || o.before || o.Delays != nil || !byNeed(d, points) {
		o.Phases = max(o.Phases, 0)
		if o.Phases == 0 {
			o.Phases = DefaultPhases
		}
		evs, _, err := evaluatePhases(d, points, o, everyPhase(o.Phases), o.Phases, false)
		return evs, err
	}
	evs, agree, err := evaluatePhases(d, points, o, byNeedPhases, DefaultPhases, true)
	if err != nil {
		return nil, err
	}
	if agree {
		for i := range evs {
			evs[i].Phases = len(byNeedPhases)
		}
		return evs, nil
	}
	evs, _, err = evaluatePhases(d, points, o, everyPhase(DefaultPhases), DefaultPhases, false)
	return evs, err
}

// byNeed reports whether d is long enough for phases by need: at least
// ByNeedMinPeriods of the longest period among points.
func byNeed(d *Demand, points []Point) bool {
	longest := time.Duration(0)
	for _, p := range points {
		longest = max(longest, p.Period)
	}
	return longest > 0 && d.Duration() >= longest*ByNeedMinPeriods
}

// everyPhase is 0..n-1.
func everyPhase(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// evaluatePhases evaluates points at the given phases, of of: phase ph
// starts the periods ph/of of a period after the first sample. With check
// set it also reports whether the phases agree at every point
// (phasesAgree).
func evaluatePhases(d *Demand, points []Point, o Options, phases []int, of int, check bool) ([]Evaluation, bool, error) {
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	for _, p := range points {
		if err := p.Check(); err != nil {
			return nil, false, err
		}
	}
	periods := map[time.Duration]bool{}
	minPeriod := time.Duration(math.MaxInt64)
	for _, p := range points {
		periods[p.Period] = true
		minPeriod = min(minPeriod, p.Period)
	}
	if err := d.Check(minPeriod); err != nil {
		return nil, false, err
	}
	cores := d.Bound()
	// Demand with a per-CPU split over several CPUs is replayed with the
	// kernel's per-CPU slices too (cfs.Periods.ReplaySlices): its throttling counts
	// are the slice replay's, its delays the fluid replay's.
	var sp *cfs.Split
	if !o.WallClock && !o.stranded {
		sp = d.Split()
	}
	held := 0.0 // the runtime the CPUs can hold beside the pool
	if sp != nil {
		held = float64(sp.N) * float64(cfs.Slice)
	}
	var jobs []job
	var plist []time.Duration
	for p := range periods {
		plist = append(plist, p)
	}
	sort.Slice(plist, func(i, j int) bool { return plist[i] < plist[j] })
	for _, p := range plist {
		for _, ph := range phases {
			jobs = append(jobs, job{p, ph, of})
		}
	}
	// replay[i]: point i gets the full replay.
	replay := make([]bool, len(points))
	var counts [][]cfs.Count // counts[j][i]: job j, point i (Exact false where the periods differ)
	if o.Full == nil || sp != nil || o.WallClock {
		// The one pass counts the fluid replay of work that waits: the
		// slice replay's counts, and those of demand bound to wall-clock
		// time, come from replaying every point.
		for i := range replay {
			replay[i] = true
		}
	} else {
		counts = countLadder(d, points, jobs, o, cores)
		// A count the one pass could not take: replay the point at that
		// phase for its counts.
		fixCounts(d, points, jobs, counts, o, cores)
		for i, p := range points {
			replay[i] = o.Full(i, countsOnly(pointEval(p), jobs, counts, i))
		}
	}
	// results[j][i]: job j, point i (nil where the periods differ).
	results := make([][]*cfs.Result, len(jobs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(o.Workers, len(jobs)) {
		wg.Go(func() {
			scratch := scratchPool.Get().(*cfs.Scratch)
			defer scratchPool.Put(scratch)
			for j := range next {
				jb := jobs[j]
				ps := cfs.Cut(d, jb.period, jb.offset())
				out := make([]*cfs.Result, len(points))
				// A quota that covers the busiest period of this phase never
				// throttles: every period takes replay's fast path, and the
				// counts and delays are the same for every such point
				// (periods depend only on when work arrives, bursts need a
				// period above its quota). Replay the first such point once.
				maxW := 0.0
				for _, w := range ps.Work {
					maxW = max(maxW, w)
				}
				var free *cfs.Result
				for i, p := range points {
					if p.Period != jb.period || !replay[i] {
						continue
					}
					q := o.quota(p, cores)
					if float64(q) >= maxW+held+cfs.Eps && free != nil {
						out[i] = free
						continue
					}
					r := ps.Replay(cfs.Setting{Quota: q, Burst: p.Burst(), Cores: cores, WallClock: o.WallClock}, newHist(), scratch)
					if sp != nil {
						r.Stat, r.ThrottledNs = ps.ReplaySlices(q, p.Burst(), sp)
					}
					out[i] = &r
					if float64(q) >= maxW+held+cfs.Eps {
						free = &r
					}
				}
				results[j] = out
			}
		})
	}
	for j, jb := range jobs {
		for i, p := range points {
			if replay[i] && p.Period == jb.period {
				next <- j // a job with something to replay
				break
			}
		}
	}
	close(next)
	wg.Wait()

	evals := make([]Evaluation, len(points))
	h := newHist() // each point's, pooled over the phases
	defer histPool.Put(h)
	for i, p := range points {
		e := pointEval(p)
		if !replay[i] {
			evals[i] = countsOnly(e, jobs, counts, i)
			continue
		}
		*h = cfs.DelayHist{}
		var periods, throttled, bursts uint64
		var thrNs, lostNs float64
		n := 0
		e.ThrottledRatioBest = 1
		for j := range jobs {
			if results[j] == nil {
				continue // a job nothing was replayed at
			}
			r := results[j][i]
			if r == nil {
				continue
			}
			n++
			s := r.Stat
			periods += s.Periods
			throttled += s.ThrottledPeriods
			bursts += s.Bursts
			thrNs += r.ThrottledNs
			lostNs += r.LostNs
			if s.Periods > 0 {
				e.ThrottledRatioWorst = max(e.ThrottledRatioWorst, float64(s.ThrottledPeriods)/float64(s.Periods))
				e.ThrottledRatioBest = min(e.ThrottledRatioBest, float64(s.ThrottledPeriods)/float64(s.Periods))
			}
			h.Merge(r.Hist)
		}
		if periods > 0 {
			e.ThrottledRatio = float64(throttled) / float64(periods)
		}
		e.ThrottledRatioBest = min(e.ThrottledRatioBest, e.ThrottledRatio)
		e.Periods, e.ThrottledPeriods, e.Bursts = float64(periods)/float64(n), float64(throttled)/float64(n), float64(bursts)/float64(n)
		e.ThrottledSeconds = thrNs / float64(n) / 1e9
		e.LostSeconds = lostNs / float64(n) / 1e9
		e.DelayP50Ms, e.DelayP99Ms, e.DelayMaxMs = h.Quantile(0.5)/1e6, h.Quantile(0.99)/1e6, h.Max()/1e6
		if o.Delays != nil {
			o.Delays(i, h)
		}
		evals[i] = e
	}
	agree := check && phasesAgree(points, jobs, replay, counts, results)
	// The phases' histograms go back to the pool (a point that shared
	// another's replay shares its histogram: put it back once).
	for j := range results {
		for _, r := range results[j] {
			if r != nil && r.Hist != nil {
				histPool.Put(r.Hist)
				r.Hist = nil
			}
		}
	}
	return evals, agree, nil
}

// pointEval is an Evaluation of p with nothing evaluated yet.
func pointEval(p Point) Evaluation {
	return Evaluation{LimitMilli: p.LimitMilli, BurstMilli: p.BurstMilli, PeriodUsec: int64(p.Period / time.Microsecond),
		QuotaUsec: int64(p.Quota() / time.Microsecond), BurstUsec: int64(p.Burst() / time.Microsecond)}
}

// job is one period grid Evaluate replays at: a period and a phase, of
// of phases.
type job struct {
	period    time.Duration
	phase, of int
}

// offset is where the job's first period starts after the first sample.
func (jb job) offset() time.Duration {
	return jb.period * time.Duration(jb.phase) / time.Duration(jb.of)
}

// phasesAgree reports whether, at every point, every pair of its jobs
// (phases at its period) has throttled shares within PhaseShareBound and,
// where the point was replayed in full, delay p99s within PhaseDelayBound
// of the larger.
func phasesAgree(points []Point, jobs []job, replay []bool, counts [][]cfs.Count, results [][]*cfs.Result) bool {
	for i, p := range points {
		var shares, p99s []float64
		for j, jb := range jobs {
			if jb.period != p.Period {
				continue
			}
			var periods, throttled uint64
			if replay[i] {
				r := results[j][i]
				if r == nil {
					return false
				}
				periods, throttled = r.Stat.Periods, r.Stat.ThrottledPeriods
				if r.Hist != nil {
					p99s = append(p99s, r.Hist.Quantile(0.99))
				}
			} else {
				periods, throttled = counts[j][i].Periods, counts[j][i].ThrottledPeriods
			}
			if periods == 0 {
				return false
			}
			shares = append(shares, float64(throttled)/float64(periods))
		}
		if len(shares) > 0 && slices.Max(shares)-slices.Min(shares) >= PhaseShareBound {
			return false
		}
		if len(p99s) > 0 && slices.Max(p99s)-slices.Min(p99s) > PhaseDelayBound*slices.Max(p99s) {
			return false
		}
	}
	return true
}

// countLadder counts every point's periods and throttled periods at every
// job in one pass over each job's period sums (cfs.CountLadder).
func countLadder(d *Demand, points []Point, jobs []job, o Options, cores float64) [][]cfs.Count {
	out := make([][]cfs.Count, len(jobs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(o.Workers, len(jobs)) {
		wg.Go(func() {
			for j := range next {
				jb := jobs[j]
				ps := cfs.Cut(d, jb.period, jb.offset())
				var settings []cfs.Setting
				var ix []int
				for i, p := range points {
					if p.Period == jb.period {
						settings = append(settings, cfs.Setting{Quota: o.quota(p, cores), Burst: p.Burst(), Cores: cores, WallClock: o.WallClock})
						ix = append(ix, i)
					}
				}
				row := make([]cfs.Count, len(points))
				for k, c := range ps.CountLadder(settings) {
					row[ix[k]] = c
				}
				out[j] = row
			}
		})
	}
	for j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	return out
}

// fixCounts replays each point at each job where the one pass left its
// count to Replay (Count.Exact false), and puts the replay's counts there.
// A near tie at one phase costs that phase's replay, not the ten.
func fixCounts(d *Demand, points []Point, jobs []job, counts [][]cfs.Count, o Options, cores float64) {
	var todo []int
	for j, jb := range jobs {
		for i, p := range points {
			if p.Period == jb.period && !counts[j][i].Exact {
				todo = append(todo, j)
				break
			}
		}
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(o.Workers, len(todo)) {
		wg.Go(func() {
			scratch := scratchPool.Get().(*cfs.Scratch)
			defer scratchPool.Put(scratch)
			var h *cfs.DelayHist // nil: the replay counts only
			if o.before {
				h = newHist()
				defer histPool.Put(h)
			}
			for j := range next {
				jb := jobs[j]
				ps := cfs.Cut(d, jb.period, jb.offset())
				for i, p := range points {
					if p.Period != jb.period || counts[j][i].Exact {
						continue
					}
					if h != nil {
						*h = cfs.DelayHist{}
					}
					r := ps.Replay(cfs.Setting{Quota: o.quota(p, cores), Burst: p.Burst(), Cores: cores, WallClock: o.WallClock}, h, scratch)
					counts[j][i] = cfs.Count{Periods: r.Stat.Periods, ThrottledPeriods: r.Stat.ThrottledPeriods, Exact: true}
				}
			}
		})
	}
	for _, j := range todo {
		next <- j
	}
	close(next)
	wg.Wait()
}

// countsOnly is e with point i's counts over the jobs (mean over the
// phases, as Evaluate gives a replay's).
func countsOnly(e Evaluation, jobs []job, counts [][]cfs.Count, i int) Evaluation {
	var periods, throttled uint64
	n := 0
	e.ThrottledRatioBest = 1
	for j, jb := range jobs {
		if jb.period != e.Point().Period {
			continue
		}
		c := counts[j][i]
		n++
		periods += c.Periods
		throttled += c.ThrottledPeriods
		if c.Periods > 0 {
			e.ThrottledRatioWorst = max(e.ThrottledRatioWorst, float64(c.ThrottledPeriods)/float64(c.Periods))
			e.ThrottledRatioBest = min(e.ThrottledRatioBest, float64(c.ThrottledPeriods)/float64(c.Periods))
		}
	}
	if periods > 0 {
		e.ThrottledRatio = float64(throttled) / float64(periods)
	}
	e.ThrottledRatioBest = min(e.ThrottledRatioBest, e.ThrottledRatio)
	e.Periods, e.ThrottledPeriods = float64(periods)/float64(n), float64(throttled)/float64(n)
	e.CountsOnly = true
	return e
}

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
