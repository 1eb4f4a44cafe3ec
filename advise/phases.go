package advise

import (
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
)

// Evaluate replays d through every point at every phase. Points must pass
// Check. The result is in the order of points and does not depend on
// Workers.
//
// With Options.Phases 0 (and no Delays callback), a window of
// ByNeedMinPeriods periods or more takes phases by need: two phases first,
// and all DefaultPhases where they differ. Where the two throttled shares
// differ by PhaseShareBound or more at some point, the period boundary
// decides which periods throttle, and a point whose two phases happen to
// agree may still differ at the other eight: every point takes every
// phase. Where the shares agree at every point, only the points whose
// delay p99s differ by more than PhaseDelayBound take every phase (the
// waiting work's tail at one limit). A point that takes every phase is
// evaluated exactly as DefaultPhases phases evaluate it (its two phases
// are not replayed again); the others are the two phases' mean
// (Evaluation.Phases 2). Full is called for every point with the two
// phases' counts, then again, for the points that take every phase, with
// theirs. Options.Phases N replays exactly N phases.
func Evaluate(d *Demand, points []Point, o Options) ([]Evaluation, error) {
	r, err := newPhaseRun(d, points, o)
	if err != nil {
		return nil, err
	}
	every := make([]bool, len(points))
	for i := range every {
		every[i] = true
	}
	if o.Phases > 0 || o.before || o.Delays != nil || !byNeed(d, points) {
		n := o.Phases
		if n <= 0 {
			n = DefaultPhases
		}
		// A long window's every phase is not kept: a day's ten cuts are
		// about 100 MB a window.
		all := r.stage(everyPhase(n), n, !byNeed(d, points))
		all.run(every, nil)
		defer all.release()
		return all.evals(every), nil
	}
	two := r.stage(byNeedPhases, DefaultPhases, true)
	two.run(every, nil)
	defer two.release()
	evs := two.evals(every)
	back := make([]bool, len(points)) // the points that take every phase
	fall, locked := false, false
	for i := range points {
		shares, delays := two.agree(i)
		switch {
		case !shares:
			locked = true
		case !delays:
			back[i], fall = true, true
		default:
			evs[i].Phases = len(byNeedPhases)
		}
	}
	if locked {
		back, fall = every, true
	}
	if !fall {
		return evs, nil
	}
	all := r.stage(everyPhase(DefaultPhases), DefaultPhases, false)
	all.run(back, two)
	defer all.release()
	for i, e := range all.evals(back) {
		if back[i] {
			evs[i] = e
		}
	}
	return evs, nil
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

// phaseRun is what the evaluation of points over d shares between its
// stages (the phases replayed first, then every phase where they differ).
type phaseRun struct {
	d      *Demand
	points []Point
	o      Options
	cores  float64
	// sp is the per-CPU split demand over several CPUs is replayed with
	// (nil: the fluid replay alone), held the runtime its CPUs can hold
	// beside the pool.
	sp   *cfs.Split
	held float64
	// memo keeps the first stage's cuts and counts for later calls over
	// the same windows (Options.memo; nil: within this call).
	memo *memo
}

// newPhaseRun checks the points and d for them.
func newPhaseRun(d *Demand, points []Point, o Options) (*phaseRun, error) {
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	minPeriod := time.Duration(math.MaxInt64)
	for _, p := range points {
		if err := p.Check(); err != nil {
			return nil, err
		}
		minPeriod = min(minPeriod, p.Period)
	}
	if err := d.Check(minPeriod); err != nil {
		return nil, err
	}
	r := &phaseRun{d: d, points: points, o: o, cores: d.Bound(), memo: o.memo}
	if r.memo == nil {
		r.memo = newMemo()
	}
	// Demand with a per-CPU split over several CPUs is replayed with the
	// kernel's per-CPU slices too (cfs.Periods.ReplaySlices): its throttling counts
	// are the slice replay's, its delays the fluid replay's.
	if !o.WallClock && !o.stranded {
		r.sp = d.Split()
	}
	if r.sp != nil {
		r.held = float64(r.sp.N) * float64(cfs.Slice)
	}
	return r, nil
}

// stage is the evaluation at the given phases, of of, of every period
// among the points: one job per period and phase, periods in ascending
// order, then phases.
func (r *phaseRun) stage(phases []int, of int, keep bool) *stage {
	periods := map[time.Duration]bool{}
	for _, p := range r.points {
		periods[p.Period] = true
	}
	var plist []time.Duration
	for p := range periods {
		plist = append(plist, p)
	}
	sort.Slice(plist, func(i, j int) bool { return plist[i] < plist[j] })
	s := &stage{phaseRun: r, keep: keep}
	for _, p := range plist {
		for _, ph := range phases {
			s.jobs = append(s.jobs, job{p, ph, of})
		}
	}
	return s
}

// stage is one set of jobs and what they gave for the points run at it.
type stage struct {
	*phaseRun
	jobs []job
	// replay[i]: point i got the full replay.
	replay []bool
	// counts[j][i]: job j, point i (Exact false where the periods differ
	// or the point was not run); nil where every point is replayed.
	counts [][]cfs.Count
	// results[j][i]: job j, point i (nil where the periods differ, the
	// point is only counted or was not run; results[j] nil: nothing
	// replayed at job j).
	results [][]*cfs.Result
	// keep puts the stage's cuts and counts in the memo; cuts[j] is job
	// j's while the stage runs.
	keep bool
	cuts []*memoCut
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

// run evaluates the points in which at every job of s. A job that prev
// has too (the same period and offset) is not run again: its counts, and
// its replays of the points both replay in full, are prev's.
func (s *stage) run(which []bool, prev *stage) {
	n := len(s.points)
	o := s.o
	s.cuts = make([]*memoCut, len(s.jobs))
	defer func() {
		if !s.keep && !s.o.before {
			// Cuts at grids only this stage uses: their storage serves
			// the next window's (cfs.Periods.Recycle).
			for _, c := range s.cuts {
				if c != nil && c.ps != nil {
					c.ps.Recycle()
				}
			}
		}
		s.cuts = nil
	}()
	s.replay = make([]bool, n)
	s.results = make([][]*cfs.Result, len(s.jobs))
	from := make([]int, len(s.jobs)) // from[j]: prev's job j's is, or -1
	for j, jb := range s.jobs {
		from[j] = -1
		if prev != nil {
			for pj, pjb := range prev.jobs {
				if pjb.period == jb.period && pjb.offset() == jb.offset() {
					from[j] = pj
				}
			}
		}
	}
	if o.Full == nil || s.sp != nil || o.WallClock {
		// The one pass counts the fluid replay of work that waits: the
		// slice replay's counts, and those of demand bound to wall-clock
		// time, come from replaying every point.
		copy(s.replay, which)
	} else {
		s.counts = make([][]cfs.Count, len(s.jobs))
		var todo []int // the jobs to count at
		for j := range s.jobs {
			if from[j] >= 0 && prev.counts != nil {
				s.counts[j] = slices.Clone(prev.counts[from[j]])
			} else {
				todo = append(todo, j)
			}
		}
		s.countLadder(todo, which)
		// A count the one pass could not take: replay the point at that
		// phase for its counts.
		s.fixCounts(todo, which)
		for i, p := range s.points {
			if which[i] {
				s.replay[i] = o.Full(i, countsOnly(pointEval(p), s.jobs, s.counts, i))
			}
		}
	}
	// What prev replayed in full at the same job is this stage's.
	for j := range s.jobs {
		if from[j] < 0 || prev.results[from[j]] == nil {
			continue
		}
		for i, pr := range prev.results[from[j]] {
			if pr != nil && s.replay[i] && prev.replay[i] {
				if s.results[j] == nil {
					s.results[j] = make([]*cfs.Result, n)
				}
				s.results[j][i] = pr
			}
		}
	}
	var todo []int // the jobs with something left to replay
	for j, jb := range s.jobs {
		for i, p := range s.points {
			if s.replay[i] && p.Period == jb.period && (s.results[j] == nil || s.results[j][i] == nil) {
				todo = append(todo, j)
				break
			}
		}
	}
	// The jobs' cuts first, then every point at every job replayed on its
	// own, as many at once as there are workers: a job's points no longer
	// wait for each other on one CPU while another CPU has nothing left.
	// A quota that covers the busiest period of a job's phase never
	// throttles: every period takes replay's fast path, and the counts and
	// delays are the same for every such point (periods depend only on
	// when work arrives, bursts need a period above its quota). The first
	// such point is replayed once, and the others at that job share it.
	cuts := s.cutsAt(todo)
	type share struct{ j, i, free int } // point i at job j shares point free's replay
	var tasks []replayGroup
	var shares []share
	out := make([][]*cfs.Result, len(s.jobs))
	for _, j := range todo {
		c := cuts[j]
		out[j] = make([]*cfs.Result, n)
		free := -1
		var is []int // the points to replay at job j
		for i := range s.points {
			if !s.toReplay(j, i) {
				continue
			}
			if s.freeAt(c, i) {
				if free >= 0 {
					shares = append(shares, share{j, i, free})
					continue
				}
				free = i
			}
			is = append(is, i)
		}
		// Points of like cost walk together: those that throttle in most
		// periods walk most of the same periods' samples.
		cost := func(i int) float64 {
			if s.counts == nil || s.counts[j] == nil {
				return 0
			}
			return float64(s.counts[j][i].ThrottledPeriods)
		}
		sort.SliceStable(is, func(a, b int) bool { return cost(is[a]) > cost(is[b]) })
		for _, g := range replayGroups(j, is) {
			for _, i := range g.is {
				g.cost += cost(i)
			}
			tasks = append(tasks, g)
		}
	}
	// The costliest walks first, so that the last to end is a short one.
	sort.SliceStable(tasks, func(a, b int) bool { return tasks[a].cost > tasks[b].cost })
	s.each(indices(len(tasks)), func(k int, scratch *cfs.Scratch) {
		t := tasks[k]
		c := cuts[t.j]
		settings, hists := make([]cfs.Setting, len(t.is)), make([]*cfs.DelayHist, len(t.is))
		for m, i := range t.is {
			settings[m], hists[m] = s.setting(s.points[i]), newHist()
		}
		for m, r := range c.ps.ReplayMany(settings, hists, scratch) {
			if s.sp != nil {
				r.Stat, r.ThrottledNs = c.ps.ReplaySlices(settings[m].Quota, settings[m].Burst, s.sp)
			}
			out[t.j][t.is[m]] = &r
		}
	})
	for _, sh := range shares {
		out[sh.j][sh.i] = out[sh.j][sh.free]
	}
	for _, j := range todo {
		if s.results[j] == nil {
			s.results[j] = out[j]
			continue
		}
		for i, r := range out[j] {
			if r != nil {
				s.results[j][i] = r
			}
		}
	}
}

// toReplay reports whether point i is to be replayed in full at job j and
// is not yet.
func (s *stage) toReplay(j, i int) bool {
	return s.replay[i] && s.points[i].Period == s.jobs[j].period && (s.results[j] == nil || s.results[j][i] == nil)
}

// freeAt reports whether point i's quota covers the busiest period of cut
// c (and the runtime the CPUs hold beside the pool): it never throttles
// there.
func (s *stage) freeAt(c *memoCut, i int) bool {
	return float64(s.o.quota(s.points[i], s.cores)) >= c.maxW+s.held+cfs.Eps
}

// each calls f for every job in todo, on up to Workers goroutines, each
// with a replay's scratch of its own.
func (s *stage) each(todo []int, f func(j int, scratch *cfs.Scratch)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(s.o.Workers, len(todo)) {
		wg.Go(func() {
			scratch := scratchPool.Get().(*cfs.Scratch)
			defer scratchPool.Put(scratch)
			for j := range next {
				f(j, scratch)
			}
		})
	}
	for _, j := range todo {
		next <- j
	}
	close(next)
	wg.Wait()
}

// evals is every point in which's evaluation over s's jobs (the others'
// are zero). A Delays callback sees each point's pooled histogram.
func (s *stage) evals(which []bool) []Evaluation {
	evals := make([]Evaluation, len(s.points))
	h := newHist() // each point's, pooled over the phases
	defer histPool.Put(h)
	for i, p := range s.points {
		if !which[i] {
			continue
		}
		e := pointEval(p)
		if !s.replay[i] {
			evals[i] = countsOnly(e, s.jobs, s.counts, i)
			continue
		}
		*h = cfs.DelayHist{}
		var periods, throttled, bursts uint64
		var thrNs, lostNs float64
		n := 0
		e.ThrottledRatioBest = 1
		for j := range s.jobs {
			if s.results[j] == nil {
				continue // a job nothing was replayed at
			}
			r := s.results[j][i]
			if r == nil {
				continue
			}
			n++
			st := r.Stat
			periods += st.Periods
			throttled += st.ThrottledPeriods
			bursts += st.Bursts
			thrNs += r.ThrottledNs
			lostNs += r.LostNs
			if st.Periods > 0 {
				e.ThrottledRatioWorst = max(e.ThrottledRatioWorst, float64(st.ThrottledPeriods)/float64(st.Periods))
				e.ThrottledRatioBest = min(e.ThrottledRatioBest, float64(st.ThrottledPeriods)/float64(st.Periods))
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
		if s.o.Delays != nil {
			s.o.Delays(i, h)
		}
		evals[i] = e
	}
	return evals
}

// release gives the phases' histograms back to the pool (a point that
// shared another's replay, or a stage that took another's, shares its
// histogram: it goes back once).
func (s *stage) release() {
	for j := range s.results {
		for _, r := range s.results[j] {
			if r != nil && r.Hist != nil {
				histPool.Put(r.Hist)
				r.Hist = nil
			}
		}
	}
}

// pointEval is an Evaluation of p with nothing evaluated yet.
func pointEval(p Point) Evaluation {
	return Evaluation{LimitMilli: p.LimitMilli, BurstMilli: p.BurstMilli, PeriodUsec: int64(p.Period / time.Microsecond),
		QuotaUsec: int64(p.Quota() / time.Microsecond), BurstUsec: int64(p.Burst() / time.Microsecond)}
}

// agree reports whether point i's jobs (the phases at its period) have
// throttled shares within PhaseShareBound of each other (shares; false
// too where a job has no period) and, where the point was replayed in
// full, delay p99s within PhaseDelayBound of the larger (delays).
func (s *stage) agree(i int) (shares, delays bool) {
	p := s.points[i]
	var ratios, p99s []float64
	for j, jb := range s.jobs {
		if jb.period != p.Period {
			continue
		}
		var periods, throttled uint64
		if s.replay[i] {
			if s.results[j] == nil || s.results[j][i] == nil {
				return false, false
			}
			r := s.results[j][i]
			periods, throttled = r.Stat.Periods, r.Stat.ThrottledPeriods
			if r.Hist != nil {
				p99s = append(p99s, r.Hist.Quantile(0.99))
			}
		} else {
			periods, throttled = s.counts[j][i].Periods, s.counts[j][i].ThrottledPeriods
		}
		if periods == 0 {
			return false, false
		}
		ratios = append(ratios, float64(throttled)/float64(periods))
	}
	shares = len(ratios) == 0 || slices.Max(ratios)-slices.Min(ratios) < PhaseShareBound
	delays = len(p99s) == 0 || slices.Max(p99s)-slices.Min(p99s) <= PhaseDelayBound*slices.Max(p99s)
	return shares, delays
}

// countLadder counts the periods and throttled periods of every point in
// which at the jobs todo, in one pass over each job's period sums
// (cfs.CountLadder), but for the counts the memo has.
func (s *stage) countLadder(todo []int, which []bool) {
	s.each(todo, func(j int, _ *cfs.Scratch) {
		jb := s.jobs[j]
		c := s.cut(j)
		row := make([]cfs.Count, len(s.points))
		var settings []cfs.Setting
		var ix []int
		for i, p := range s.points {
			if p.Period != jb.period || !which[i] {
				continue
			}
			st := s.setting(p)
			if n, ok := s.memo.count(c, st); ok {
				row[i] = n
				continue
			}
			settings = append(settings, st)
			ix = append(ix, i)
		}
		if len(settings) > 0 {
			for k, n := range c.ps.CountLadder(settings) {
				row[ix[k]] = n
				if n.Exact {
					s.memo.keepCount(c, settings[k], n)
				}
			}
		}
		s.counts[j] = row
	})
}

// setting is what p is replayed with.
func (s *stage) setting(p Point) cfs.Setting {
	return cfs.Setting{Quota: s.o.quota(p, s.cores), Burst: p.Burst(), Cores: s.cores, WallClock: s.o.WallClock}
}

// fixCounts replays each point in which at each job of todo where the one
// pass left its count to Replay (Count.Exact false), and puts the
// replay's counts there. A near tie at one phase costs that phase's
// replay, not the ten.
func (s *stage) fixCounts(todo []int, which []bool) {
	// A job's settings replayed replayTogether at a time (one walk over
	// the demand each), as many walks at once as there are workers.
	var tasks []replayGroup
	var fix []int
	for _, j := range todo {
		var is []int
		for i, p := range s.points {
			if which[i] && p.Period == s.jobs[j].period && !s.counts[j][i].Exact {
				is = append(is, i)
			}
		}
		if len(is) > 0 {
			tasks, fix = append(tasks, replayGroups(j, is)...), append(fix, j)
		}
	}
	cuts := s.cutsAt(fix)
	s.each(indices(len(tasks)), func(k int, scratch *cfs.Scratch) {
		t := tasks[k]
		c := cuts[t.j]
		settings, hists := make([]cfs.Setting, len(t.is)), make([]*cfs.DelayHist, len(t.is)) // nil: the replay counts only
		for m, i := range t.is {
			settings[m] = s.setting(s.points[i])
			if s.o.before {
				hists[m] = newHist()
				defer histPool.Put(hists[m])
			}
		}
		for m, r := range c.ps.ReplayMany(settings, hists, scratch) {
			i := t.is[m]
			s.counts[t.j][i] = cfs.Count{Periods: r.Stat.Periods, ThrottledPeriods: r.Stat.ThrottledPeriods, Exact: true}
			s.memo.keepCount(c, settings[m], s.counts[t.j][i])
		}
	})
}

// cutsAt makes the cuts of the jobs todo (s.cut), a job at a time on each
// worker, and returns them by job (nil at the others): the path before,
// which cuts anew at every use, then cuts once per job, as it did when a
// job's points were replayed one after the other.
func (s *stage) cutsAt(todo []int) []*memoCut {
	cuts := make([]*memoCut, len(s.jobs))
	s.each(todo, func(j int, _ *cfs.Scratch) { cuts[j] = s.cut(j) })
	return cuts
}

// indices is 0..n-1.
func indices(n int) []int { return everyPhase(n) }

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

// replayTogether is how many points of one job are replayed in one walk
// over the demand (cfs.ReplayMany): the walk reads and spreads each sample
// once for all of them. More than a few walks at once hold more queues and
// histograms than a CPU's caches do, and leave fewer tasks to share out
// among the workers (docs/performance.md).
const replayTogether = 8

// replayGroup is points of job j replayed in one walk (cfs.ReplayMany).
type replayGroup struct {
	j    int
	is   []int
	cost float64 // the band's order: the periods they throttle in, as counted
}

// replayGroups splits job j's points is, in their order, into walks of
// replayTogether points.
func replayGroups(j int, is []int) []replayGroup {
	var out []replayGroup
	for len(is) > 0 {
		k := min(replayTogether, len(is))
		out, is = append(out, replayGroup{j: j, is: is[:k:k]}), is[k:]
	}
	return out
}
