package agent

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/units"
)

// ErrNoDemand marks a summary that holds no replayed demand yet (a
// container seen for less than one chunk).
var ErrNoDemand = errors.New("no demand summarised yet")

// Span is the demand the window holds: time replayed and CPU time used.
func (s *ContainerSummary) Span() (span time.Duration, work float64) {
	for _, b := range s.blocks {
		span += b.Span
		work += b.Work
	}
	return span, work
}

// aggPoint is one point's figures over the closed blocks (all but the
// last), kept until the blocks change.
type aggPoint struct {
	thr, thrSec, bursts, extra float64
	delay                      delayKnots
	worst, best                float64
}

// closedAgg returns the aggregate of the closed blocks, computing it when
// the blocks changed since.
func (s *ContainerSummary) closedAgg() map[int32]*aggPoint {
	if s.closed != nil {
		return s.closed
	}
	s.closed = map[int32]*aggPoint{}
	closed := s.blocks[:max(len(s.blocks)-1, 0)]
	keys := map[int32]bool{}
	for _, b := range closed {
		for _, p := range b.Points {
			keys[p.Key] = true
		}
	}
	parts := make([]weighted, 0, len(closed))
	for k := range keys {
		a := &aggPoint{best: 1}
		parts = parts[:0]
		for _, b := range closed {
			var r float64
			if p := b.find(k); p != nil {
				a.thr += float64(p.Throttled)
				a.thrSec += float64(p.ThrottledSeconds)
				a.bursts += float64(p.Bursts)
				a.extra += float64(p.ExtraPeriods)
				parts = append(parts, weighted{p.Delay.unpack(), b.Work})
				if n := b.Periods + float64(p.ExtraPeriods); n > 0 {
					r = float64(p.Throttled) / n
				}
			} else {
				parts = append(parts, weighted{delayKnots{Zero: 1}, b.Work})
			}
			if b.Periods > 0 {
				a.worst, a.best = max(a.worst, r), min(a.best, r)
			}
		}
		a.delay = mergeDelay(parts)
		s.closed[k] = a
	}
	return s.closed
}

// evalKey aggregates one ladder point over the window's blocks: the closed
// blocks' aggregate and the open block.
func (s *ContainerSummary) evalKey(i int, burst bool) advise.Evaluation {
	p := advise.Point{LimitMilli: s.cfg.Ladder[i], Period: s.cfg.Period}
	if burst {
		p.BurstMilli = p.LimitMilli
	}
	e := evalOf(p)
	k := key(i, burst)
	var periods, closedWork float64
	closedN := 0
	for _, b := range s.blocks[:len(s.blocks)-1] {
		periods += b.Periods
		closedWork += b.Work
		if b.Periods > 0 {
			closedN++
		}
	}
	agg := s.closedAgg()[k]
	if agg == nil {
		agg = &aggPoint{delay: delayKnots{Zero: 1}}
	}
	if closedN > 0 {
		e.ThrottledRatioWorst, e.ThrottledRatioBest = agg.worst, agg.best
	} else {
		e.ThrottledRatioBest = 1
	}
	thr, thrSec, bursts := agg.thr, agg.thrSec, agg.bursts
	open := s.blocks[len(s.blocks)-1]
	periods += open.Periods + agg.extra
	openDelay := delayKnots{Zero: 1}
	var r float64
	if a := open.find(k); a != nil {
		thr += float64(a.Throttled)
		thrSec += float64(a.ThrottledSeconds)
		bursts += float64(a.Bursts)
		openDelay = a.Delay.unpack()
		periods += float64(a.ExtraPeriods)
		if n := open.Periods + float64(a.ExtraPeriods); n > 0 {
			r = float64(a.Throttled) / n
		}
	}
	if open.Periods > 0 {
		e.ThrottledRatioWorst, e.ThrottledRatioBest = max(e.ThrottledRatioWorst, r), min(e.ThrottledRatioBest, r)
	}
	if periods > 0 {
		e.ThrottledRatio = thr / periods
	}
	e.ThrottledRatioBest = min(e.ThrottledRatioBest, e.ThrottledRatio)
	e.Periods, e.ThrottledPeriods, e.Bursts, e.ThrottledSeconds = periods, thr, bursts, thrSec
	d := mergeDelay([]weighted{{agg.delay, closedWork}, {openDelay, open.Work}})
	e.DelayP50Ms, e.DelayP99Ms, e.DelayMaxMs = float64(d.Q[iP50]), float64(d.Q[iP99]), float64(d.Max)
	return e
}

func evalOf(p advise.Point) advise.Evaluation {
	return advise.Evaluation{LimitMilli: p.LimitMilli, BurstMilli: p.BurstMilli, PeriodUsec: int64(p.Period / time.Microsecond),
		QuotaUsec: int64(p.Quota() / time.Microsecond), BurstUsec: int64(p.Burst() / time.Microsecond)}
}

// Evaluate returns the quota model's evaluation of a limit and burst
// (millicores) over the window. A limit on the ladder is exact up to the
// chunking (the replay restarts every chunk); between two ladder limits the
// figures are interpolated in log(limit), and a burst between none and the
// limit linearly between the two; a limit below the ladder is read as its
// lowest limit (10m), one above the highest use seen as never throttled.
// In the agent's evaluations the worst and best throttled shares are over
// the blocks, not the phases.
func (s *ContainerSummary) Evaluate(limitMilli, burstMilli int64) (advise.Evaluation, error) {
	p := advise.Point{LimitMilli: limitMilli, BurstMilli: burstMilli, Period: s.cfg.Period}
	if err := p.Check(); err != nil {
		return advise.Evaluation{}, err
	}
	if span, _ := s.Span(); span <= 0 {
		return advise.Evaluation{}, ErrNoDemand
	}
	lad := s.cfg.Ladder
	lo, hi := bracket(lad, limitMilli)
	lo = max(lo, 0)
	if hi >= len(lad) {
		hi = len(lad) - 1
		lo = hi
	}
	at := func(i int) advise.Evaluation {
		e0 := s.evalKey(i, false)
		if burstMilli <= 0 {
			return e0
		}
		e1 := s.evalKey(i, true)
		return lerp(e0, e1, min(float64(burstMilli)/float64(limitMilli), 1))
	}
	var e advise.Evaluation
	if lo == hi || lad[lo] >= limitMilli {
		e = at(hi)
	} else {
		f := (math.Log(float64(limitMilli)) - math.Log(float64(lad[lo]))) / (math.Log(float64(lad[hi])) - math.Log(float64(lad[lo])))
		e = lerp(at(lo), at(hi), f)
	}
	out := evalOf(p)
	out.ThrottledRatio, out.ThrottledRatioWorst, out.ThrottledRatioBest = e.ThrottledRatio, e.ThrottledRatioWorst, e.ThrottledRatioBest
	out.ThrottledSeconds, out.Periods, out.ThrottledPeriods, out.Bursts = e.ThrottledSeconds, e.Periods, e.ThrottledPeriods, e.Bursts
	out.DelayP50Ms, out.DelayP99Ms, out.DelayMaxMs = e.DelayP50Ms, e.DelayP99Ms, e.DelayMaxMs
	return out, nil
}

// lerp mixes the figures of a and b: (1-f)a + fb.
func lerp(a, b advise.Evaluation, f float64) advise.Evaluation {
	m := func(x, y float64) float64 { return x + (y-x)*f }
	a.ThrottledRatio, a.ThrottledRatioWorst, a.ThrottledRatioBest = m(a.ThrottledRatio, b.ThrottledRatio), m(a.ThrottledRatioWorst, b.ThrottledRatioWorst), m(a.ThrottledRatioBest, b.ThrottledRatioBest)
	a.ThrottledSeconds, a.ThrottledPeriods, a.Bursts = m(a.ThrottledSeconds, b.ThrottledSeconds), m(a.ThrottledPeriods, b.ThrottledPeriods), m(a.Bursts, b.Bursts)
	a.DelayP50Ms, a.DelayP99Ms, a.DelayMaxMs = m(a.DelayP50Ms, b.DelayP50Ms), m(a.DelayP99Ms, b.DelayP99Ms), m(a.DelayMaxMs, b.DelayMaxMs)
	return a
}

// usageWindows returns the mean use (cores) of every window of n buckets
// that the samples cover (99% or more of its time), oldest first, stepping
// by one bucket.
func (s *ContainerSummary) usageWindows(n int) []float64 {
	size := int64(len(s.bucketWork))
	var out []float64
	full := float32(float64(s.cfg.Bucket) * float64(n) * 0.99)
	for start := s.lastBucket - size + 1; start+int64(n)-1 <= s.lastBucket; start++ {
		if start < 0 {
			continue
		}
		var w, t float32
		for j := start; j < start+int64(n); j++ {
			w += s.bucketWork[j%size]
			t += s.bucketTime[j%size]
		}
		if t >= full {
			out = append(out, float64(w)/float64(t))
		}
	}
	return out
}

// Recommenders is what krr's and the VPA's rules set from the same data
// (millicores; 0 when the window is too short for them).
type Recommenders struct {
	// KrrMilli: krr's simple strategy, p95 of the use over 75 s (1.25 min)
	// rate windows; krr sets it as the request and sets no CPU limit.
	KrrMilli int64
	// KrrLimitMilli: krr's simple_limit strategy, p96 of the same windows
	// as the limit.
	KrrLimitMilli int64
	// VPAMilli: the VPA recommender's target, p90 of 1-minute samples plus
	// a 15% safety margin.
	VPAMilli int64
	// Windows75s and Windows60s count the windows the percentiles were
	// taken over.
	Windows75s, Windows60s int
}

// averages returns the mean use of every window of length w that the
// usage buckets cover (advise's BaselineRules average over them).
func (s *ContainerSummary) averages(w time.Duration) []float64 {
	return s.usageWindows(max(int(w/s.cfg.Bucket), 1))
}

// Recommenders computes krr's and the VPA's rules (advise.KrrDefault,
// KrrSimpleLimit, VPATarget) from the usage buckets.
func (s *ContainerSummary) Recommenders() Recommenders {
	span, _ := s.Span()
	krr := advise.KrrDefault.Apply(s.averages(advise.KrrDefault.Window), 0, span.Seconds())
	krrLimit := advise.KrrSimpleLimit.Apply(s.averages(advise.KrrSimpleLimit.Window), 0, span.Seconds())
	vpa := advise.VPATarget.Apply(s.averages(advise.VPATarget.Window), 0, span.Seconds())
	return Recommenders{KrrMilli: krr.Milli, KrrLimitMilli: krrLimit.Milli, VPAMilli: vpa.Milli, Windows75s: krr.Windows, Windows60s: vpa.Windows}
}

// AdviceInput is what the summary does not know about its container.
type AdviceInput struct {
	// Source names the container in Sampled.Source.
	Source string
	// LimitMilli is its current limit (0: none); it is evaluated too.
	LimitMilli int64
	// Target is what the recommendation must meet.
	Target advise.Target
}

// Advice is advise's answer from the summary: the ladder's evaluations over
// the window (each limit without and with a burst equal to it, plus the
// current limit and the coarse recommenders' values), the recommendation by
// advise's rule, and krr's and the VPA's rules as baselines.
func (s *ContainerSummary) Advice(in AdviceInput) (*advise.Advice, error) {
	all, err := s.AdviceFor(in, []advise.Target{in.Target})
	if err != nil {
		return nil, err
	}
	return all[0], nil
}

// CPUs is the most CPUs the container ran on over one chunk of the window
// (Block.CPUs); 0 where no chunk carried a per-CPU split.
func (s *ContainerSummary) CPUs() int {
	n := 0
	for _, b := range s.blocks {
		n = max(n, b.CPUs)
	}
	return n
}

// AdviceFor is Advice for several targets at once: the evaluations are
// made once and shared.
func (s *ContainerSummary) AdviceFor(in AdviceInput, targets []advise.Target) ([]*advise.Advice, error) {
	span, work := s.Span()
	if span <= 0 {
		return nil, ErrNoDemand
	}
	var evs []advise.Evaluation
	maxCores, samples := 0.0, 0
	var throttled uint64
	cpus, atOnce, split := 0, 0, 0
	for _, b := range s.blocks {
		maxCores = max(maxCores, b.MaxCores)
		samples += b.Samples
		throttled += b.Throttled
		cpus, atOnce, split = max(cpus, b.CPUs), max(atOnce, b.CPUsAtOnce), split+b.SplitChunks
	}
	moved, capped := s.Backlog()
	lo := work / float64(span) * 1000 // no grid point below the mean: all throttled
	for i, l := range s.cfg.Ladder {
		if float64(l) < lo*0.9 && (i+1 < len(s.cfg.Ladder) && float64(s.cfg.Ladder[i+1]) < lo*0.9) {
			continue
		}
		evs = append(evs, s.evalKey(i, false), s.evalKey(i, true))
		if float64(l) >= maxCores*1000 {
			break
		}
	}
	baselines := advise.Baselines(s.averages, work/float64(span), span.Seconds())
	extra := []int64{in.LimitMilli}
	for _, b := range baselines {
		extra = append(extra, b.Milli)
	}
	added := map[int64]bool{}
	for _, m := range extra {
		if m <= 0 || added[m] || onLadder(evs, m) {
			continue
		}
		e, err := s.Evaluate(m, 0)
		if err != nil {
			continue // a quota under 1 ms: not a limit anyone can set
		}
		added[m] = true
		evs = append(evs, e)
	}
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].LimitMilli != evs[j].LimitMilli {
			return evs[i].LimitMilli < evs[j].LimitMilli
		}
		return evs[i].BurstMilli < evs[j].BurstMilli
	})
	// The recommendation meets the target in every block (the busiest hour
	// of the day), as advise's does.
	// The self-audit at the container's own limit widens every interval
	// before the recommendation is read from them, as advise's does.
	audit := s.audit(in.LimitMilli, throttled)
	if audit != nil {
		audit.Widen(evs)
	}
	bds := s.blockDemands()
	level := s.level(bds)
	longer := s.startupLonger(bds)
	ev := &advise.Evaluated{Audit: audit, Evaluations: evs, Blocks: s.blockTable(evs, targets), BlockDemands: bds, Level: &level, Higher: s.levelHigher(evs, level.High),
		Baselines: baselines, Period: s.cfg.Period,
		Sampled: advise.Sampled{Source: in.Source, DurationSeconds: span.Seconds(), Samples: samples, MeanCores: work / float64(span),
			MaxCores10ms: maxCores, Cores: max(s.cores, 1), Phases: s.cfg.Phases, LimitMilli: in.LimitMilli,
			CPUStat: cgroup.CPUStat{ThrottledPeriods: throttled},
			// From the chunks that carried a per-CPU split (hot ones): those
			// over two CPUs or more were replayed with per-CPU slices.
			CPUs: cpus, CPUsAtOnce: atOnce, SliceModel: split > 0 && cpus > 1},
		// The rebuild ran when the sampler gave throttling counters (AddCounts).
		Rebuilt: s.counted, Moved: moved, Capped: capped}
	var out []*advise.Advice
	for _, target := range targets {
		a := advise.Decide(ev, target)
		if s.err != nil {
			a.Warnings = append(a.Warnings, "a chunk could not be replayed: "+s.err.Error())
		}
		if note := s.startupNote(a.Recommendation); note != "" {
			a.Warnings = append(a.Warnings, note)
		}
		if longer != "" {
			a.Warnings = append(a.Warnings, longer)
		}
		a.Warnings = append(a.Warnings, fmt.Sprintf("from the agent's summary: %d block(s) of %s replayed in chunks of %s; limits between the ladder's are interpolated",
			len(s.blocks), s.cfg.Block, s.cfg.Chunk))
		out = append(out, a)
	}
	return out, nil
}

// blockDemands describes the blocks that hold replayed demand, oldest
// first (those blockTable evaluates), for advise's judgement of the window:
// their means over the usage ring's buckets (15 s) stand for advise's 1 s
// means. A bucket of the start-up (SetStartup) is left out, as its
// chunks are.
func (s *ContainerSummary) blockDemands() []advise.BlockDemand {
	var out []advise.BlockDemand
	n := int64(len(s.bucketWork))
	for _, b := range s.blocks {
		if b.Span <= 0 {
			continue
		}
		d := advise.BlockDemand{Seconds: b.Span.Seconds(), MeanCores: b.Work / float64(b.Span), MaxCores10ms: b.MaxCores}
		for m := int64(b.Start / s.cfg.Bucket); m < int64((b.Start+s.cfg.Block)/s.cfg.Bucket); m++ {
			if m > s.lastBucket || m <= s.lastBucket-n || s.bucketTime[m%n] <= 0 {
				continue // not kept (left the ring) or no sample in it
			}
			if time.Duration(m)*s.cfg.Bucket < s.startupUntil {
				continue // the start-up's, kept apart from the advice (SetStartup)
			}
			d.Means = append(d.Means, float64(s.bucketWork[m%n])/float64(s.bucketTime[m%n]))
		}
		out = append(out, d)
	}
	return out
}

func onLadder(evs []advise.Evaluation, m int64) bool {
	for _, e := range evs {
		if e.LimitMilli == m && e.BurstMilli == 0 {
			return true
		}
	}
	return false
}

// evaluateBlock evaluates a limit and burst on block b's demand alone.
func (s *ContainerSummary) evaluateBlock(b *Block, limitMilli, burstMilli int64) (advise.Evaluation, error) {
	one := &ContainerSummary{cfg: s.cfg, blocks: []*Block{b}, cores: s.cores}
	return one.Evaluate(limitMilli, burstMilli)
}

// StartupEvaluation evaluates a limit and burst on the start-up's demand
// alone (ContainerSummary.SetStartup): nil when the summary holds no start-up, or
// the limit cannot be set (no limit, a quota under 1 ms, a burst above it).
func (s *ContainerSummary) StartupEvaluation(limitMilli, burstMilli int64) *advise.Evaluation {
	if s.startup == nil || s.startup.Span <= 0 || limitMilli <= 0 {
		return nil
	}
	e, err := s.evaluateBlock(s.startup, limitMilli, burstMilli)
	if err != nil {
		return nil
	}
	return &e
}

// startupLonger says, by advise's rule (advise.StartupOf over the window's
// 15 s means, bds), when the container's start-up outlasted the part kept
// apart from the advice (SetStartup): advise on the same demand would
// leave it out, the window holds it. "" when the agent did not see the
// container start, or the window shows no start-up.
func (s *ContainerSummary) startupLonger(bds []advise.BlockDemand) string {
	if s.startup == nil {
		return ""
	}
	var means []float64
	for _, d := range bds {
		means = append(means, d.Means...)
	}
	st, ok := advise.StartupOf(means, s.cfg.Bucket, nil)
	if !ok {
		return ""
	}
	in := time.Duration(st.Stretches) * s.cfg.Bucket
	if st.NotOver {
		return fmt.Sprintf("the start-up outlasted the %.0f s kept apart: the use fell from the window's start on (%s it is in the advice, which errs high)",
			s.startup.Span.Seconds(), st.Falling(s.cfg.Bucket))
	}
	keep := (s.startup.Span + in + s.cfg.Chunk - 1) / s.cfg.Chunk * s.cfg.Chunk
	return fmt.Sprintf("the start-up outlasted the %.0f s kept apart: the window's first %s still look like it (%s and are in the advice; keep at least %s of a new container apart",
		s.startup.Span.Seconds(), in, st.Describe(s.cfg.Bucket), keep)
}

// startupNote says what the start-up kept apart from the advice would get
// at the recommended limit.
func (s *ContainerSummary) startupNote(r advise.Recommendation) string {
	e := s.StartupEvaluation(r.LimitMilli, r.BurstMilli)
	if e == nil {
		return ""
	}
	b := s.startup
	return fmt.Sprintf("start-up kept apart from the advice: the container's first %.0f s in the window (mean %.2f cores, up to %.1f in 10 ms); at %s it is throttled in %.0f of %.0f periods, work delayed up to %.0f ms",
		b.Span.Seconds(), b.Work/float64(b.Span), b.MaxCores, units.FormatMilliCPU(r.LimitMilli), e.ThrottledPeriods, e.Periods, e.DelayMaxMs)
}

// BlockEvaluations evaluates a limit and burst in each block of the window
// alone, oldest first, with the block's start: how much the blocks disagree
// is the uncertainty of the window's figure (what advise's block-wise
// intervals are made of). Blocks that hold no replayed demand are left out.
func (s *ContainerSummary) BlockEvaluations(limitMilli, burstMilli int64) (starts []time.Duration, evs []advise.Evaluation, err error) {
	for _, b := range s.blocks {
		if b.Span <= 0 {
			continue
		}
		e, err := s.evaluateBlock(b, limitMilli, burstMilli)
		if err != nil {
			return nil, nil, err
		}
		starts, evs = append(starts, b.Start), append(evs, e)
	}
	if len(evs) == 0 {
		return nil, nil, ErrNoDemand
	}
	return starts, evs, nil
}

// blockTable evaluates the points of evs in each block alone
// ([block][point]), for advise.Evaluated; nil with fewer than two
// blocks. A point that misses every target over the whole window cannot be
// recommended whatever its blocks say: its pooled figure stands in for its
// blocks instead of a replay of each.
func (s *ContainerSummary) blockTable(evs []advise.Evaluation, targets []advise.Target) [][]advise.Evaluation {
	n := 0
	for _, b := range s.blocks {
		if b.Span > 0 {
			n++
		}
	}
	if n < 2 {
		return nil
	}
	table := make([][]advise.Evaluation, n)
	for b := range table {
		table[b] = make([]advise.Evaluation, len(evs))
	}
	for i, e := range evs {
		if !meetsAny(targets, e) {
			for b := range table {
				table[b][i] = e
			}
			continue
		}
		_, be, err := s.BlockEvaluations(e.LimitMilli, e.BurstMilli)
		if err != nil || len(be) != n {
			return nil
		}
		for b := range table {
			table[b][i] = be[b]
		}
	}
	return table
}

// level is advise's rule for how the level moved and where the next
// window's lies (advise.LevelOf), over the usage buckets of the blocks
// that hold replayed demand (blockDemands), oldest first.
func (s *ContainerSummary) level(bds []advise.BlockDemand) advise.Moves {
	var means []float64
	for _, d := range bds {
		means = append(means, d.Means...)
	}
	return advise.LevelOf(means, s.cfg.Bucket)
}

// levelHigher is evs with the use higher by f (the level's High), as
// advise's recommendation checks it: the same demand under a limit (and
// burst) that much lower, interpolated on the ladder (Evaluate).
func (s *ContainerSummary) levelHigher(evs []advise.Evaluation, f float64) []advise.Evaluation {
	out := make([]advise.Evaluation, len(evs))
	for i, e := range evs {
		h, err := s.Evaluate(int64(math.Floor(float64(e.LimitMilli)/f)), int64(math.Floor(float64(e.BurstMilli)/f)))
		if err != nil {
			h = e // a quota under 1 ms: the limit's own figures
		}
		out[i] = h
	}
	return out
}

// meetsAny reports whether e meets one of the targets (with advise's defaults).
func meetsAny(targets []advise.Target, e advise.Evaluation) bool {
	for _, t := range targets {
		if t.WithDefaults().Meets(e) {
			return true
		}
	}
	return false
}

// audit is the advice's self-audit over the window (advise.Audit): the
// replay at the container's own limit against the throttled periods the
// kernel counted. The agent keeps the kernel's nr_throttled but not its
// nr_periods: the share's denominator is the replay's periods at the
// limit, which counts the periods the group ran in as the kernel does.
// nil without a limit or with fewer than 10 periods.
func (s *ContainerSummary) audit(limitMilli int64, throttled uint64) *advise.Audit {
	if limitMilli <= 0 {
		return nil
	}
	e, err := s.Evaluate(limitMilli, 0)
	if err != nil || e.Periods < 10 {
		return nil
	}
	a := &advise.Audit{LimitMilli: limitMilli, PeriodUsec: int64(s.cfg.Period / time.Microsecond), Predicted: e.ThrottledRatio,
		Periods: uint64(math.Round(e.Periods)), ThrottledPeriods: throttled}
	a.Measured = min(1, float64(throttled)/e.Periods)
	a.Error = a.Predicted - a.Measured
	return a
}
