package advise

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
	"time"
)

// The uncertainty of a prediction comes from the data: the window is cut
// into time blocks, every point is replayed in each block as well as over
// the whole window, and the spread of the block estimates is the interval
// (docs/advise.md says why the spread and not a bootstrap). Blocks that
// disagree beyond what counting noise allows name the window
// non-stationary; the recommendation is the smallest limit that meets the
// target in every block.

// BlockTarget is the length a block aims at; MinBlock the shortest block
// the window is cut into, and MaxBlocks the most blocks (a longer window has
// longer blocks).
const (
	BlockTarget = 10 * time.Second
	MinBlock    = 5 * time.Second
	MaxBlocks   = 24
)

// Range is an interval [low, high], written as a two-element JSON array.
type Range [2]float64

// Block is one time block of the sampled window.
type Block struct {
	StartSeconds float64 `json:"start_seconds"`
	EndSeconds   float64 `json:"end_seconds"`
	MeanCores    float64 `json:"mean_cores"`
	MaxCores10ms float64 `json:"max_cores_10ms"`
	// ThrottledRatio is this block's predicted throttled share at the
	// recommendation's limit (without burst).
	ThrottledRatio float64 `json:"throttled_periods_ratio_at_recommendation"`
	// Differs marks a block that fails the target at the limit the whole
	// window would have recommended (only set when the window is judged
	// non-stationary).
	Differs bool `json:"differs,omitempty"`
	// Spike marks a block judged without the window's single spike
	// (Advice.Spike).
	Spike bool `json:"single_spike,omitempty"`
}

// Window is what the advice rests on: the sampled span cut into blocks, and
// whether the blocks agree.
type Window struct {
	Seconds      float64 `json:"seconds"`
	BlockSeconds float64 `json:"block_seconds"`
	Blocks       []Block `json:"blocks"`
	// Stationary is false when the blocks disagree more than the target and
	// the counting noise allow (see Nonstationary).
	Stationary bool `json:"stationary"`
	// Nonstationary says which blocks differ and how, when not Stationary.
	Nonstationary string `json:"nonstationary,omitempty"`
	// SampleForSeconds is how long to sample to see the demand's changes
	// more than once (0 when the window is enough).
	SampleForSeconds float64 `json:"sample_for_seconds,omitempty"`
	// Widened says why the intervals were widened beyond the blocks'
	// spread (gaps, a counter reset, a process that exited, a window
	// shorter than two blocks); empty when they were not.
	Widened string `json:"widened,omitempty"`
	// WholeWindowLimitMilli is the smallest limit that meets the target
	// over the whole window pooled (the recommendation meets it in every
	// block, so it is at least this).
	WholeWindowLimitMilli int64 `json:"whole_window_limit_millicores,omitempty"`
}

// Tolerance is the error band advise is validated to: max(0.07, 30%) of a
// throttled share. Intervals are widened by it where the data cannot give
// one (docs/advise.md).
func Tolerance(x float64) float64 { return max(0.07, 0.3*x) }

// blockCount returns how many blocks a window of span is cut into: 1 when
// it is shorter than two blocks of MinBlock.
func blockCount(span time.Duration) int {
	if span < 2*MinBlock {
		return 1
	}
	n := int((span + BlockTarget/2) / BlockTarget)
	return min(max(n, 2), MaxBlocks)
}

// splitBlocks cuts d into n blocks of equal time (on sample boundaries):
// each block is a view of d's samples (Demand.View), replayed from its own
// start.
func splitBlocks(d *Demand, n int) []*Demand {
	if n <= 1 {
		return []*Demand{d}
	}
	span := d.Duration()
	var out []*Demand
	i := 0
	for b := 0; b < n; b++ {
		end := span * time.Duration(b+1) / time.Duration(n)
		j := i
		for j < len(d.At)-1 && d.At[j] < end {
			j++
		}
		out = append(out, d.View(i, j+1))
		i = j
	}
	return out
}

// blockEvals is one point's evaluation in each block.
type blockEvals [][]Evaluation // [block][point]

// evaluateBlocks evaluates points over the whole of d and in each block, and
// sets every evaluation's ranges: the spread of the block estimates, widened
// by Tolerance when why is not empty or there is one block. cores is the
// whole window's parallelism bound (a block replays on the same CPUs).
// Every point is replayed in full.
func evaluateBlocks(d *Demand, points []Point, o Options, widen string) ([]Evaluation, blockEvals, []*Demand, []Evaluation, error) {
	w, err := newWindows(d, points, o, widen)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if err := w.evaluate(w.all(), true); err != nil {
		return nil, nil, nil, nil, err
	}
	return w.evs, w.be, w.blocks, w.higher, nil
}

// windows is what the intervals are evaluated over: the whole window, its
// time blocks, the whole window with its use scaled lower and higher (the
// level), and the slice bound (nil where not needed). Every point is
// evaluated in every one of them alike: counted in one pass (CountsOnly),
// or replayed in full.
type windows struct {
	points          []Point
	o               Options
	widen           string
	d               *Demand
	blocks          []*Demand
	lowerD, higherD *Demand
	bounded         bool // the slice bound is evaluated
	level           Moves
	// spike is a single spike in the window (spikeOf; nil: none), the
	// blocks it falls in (spikeIx) without it, and their evaluations.
	spike                     *Spike
	spikeIx                   []int
	spikeD                    []*Demand
	sbe                       [][]Evaluation
	evs, bound, lower, higher []Evaluation
	be                        blockEvals
	// full[i] says point i was replayed in full in every window.
	full []bool
}

// newWindows cuts d into its windows; nothing is evaluated yet.
func newWindows(d *Demand, points []Point, o Options, widen string) (*windows, error) {
	d = d.Pinned()
	if !o.before {
		o.memo = newMemo() // the count pass's cuts and counts serve the band
	}
	w := &windows{points: points, o: o, widen: widen, d: d, blocks: splitBlocks(d, blockCount(d.Duration())), full: make([]bool, len(points))}
	minPeriod := time.Duration(math.MaxInt64)
	for _, p := range points {
		minPeriod = min(minPeriod, p.Period)
	}
	if len(w.blocks) > 1 {
		for b, sub := range w.blocks {
			if sub.Duration() < minPeriod {
				return nil, fmt.Errorf("block %d spans %s, less than a period", b+1, sub.Duration())
			}
		}
	}
	// A single spike: its blocks are also evaluated without it, for the
	// recommendation to judge them by (Decide).
	if len(w.blocks) > 1 && d.Duration() <= maxSpikeWindow {
		if sp, ok := spikeOf(d, minPeriod); ok {
			w.spike = &sp
			w.spikeIx, w.spikeD = spikeBlocks(d, sp, len(w.blocks))
		}
	}
	// The slice bound: the same points with the runtime other CPUs' slices
	// can hold taken out of the quota. It only differs on a group that runs
	// on more than one CPU, and is only needed where the samples carry no
	// per-CPU split: with one, Evaluate replays the slices themselves.
	w.bounded = d.Bound() > 1 && d.Split() == nil
	// The level: the whole window replayed with its use lower and higher,
	// as far as the next window's level may lie by the data (movesOf; the
	// blocks show the level's changes within the window).
	w.level = movesOf(d)
	w.lowerD, w.higherD = scaled(d, w.level.Low), scaled(d, w.level.High)
	n := len(points)
	w.evs, w.lower, w.higher = make([]Evaluation, n), make([]Evaluation, n), make([]Evaluation, n)
	if w.bounded {
		w.bound = make([]Evaluation, n)
	}
	w.sbe = make([][]Evaluation, len(w.spikeD))
	for k := range w.sbe {
		w.sbe[k] = make([]Evaluation, n)
	}
	w.be = make(blockEvals, len(w.blocks))
	if len(w.blocks) > 1 {
		for b := range w.be {
			w.be[b] = make([]Evaluation, n)
		}
	}
	return w, nil
}

// over is w's windows over other points (the same demand, blocks, level
// and slice bound; no spike: its evaluations only serve the
// recommendation), nothing evaluated yet. The evaluations share w's cuts.
func (w *windows) over(points []Point) *windows {
	n := len(points)
	v := &windows{points: points, o: w.o, widen: w.widen, d: w.d, blocks: w.blocks, lowerD: w.lowerD, higherD: w.higherD,
		bounded: w.bounded, level: w.level, full: make([]bool, n)}
	v.evs, v.lower, v.higher = make([]Evaluation, n), make([]Evaluation, n), make([]Evaluation, n)
	if v.bounded {
		v.bound = make([]Evaluation, n)
	}
	v.be = make(blockEvals, len(v.blocks))
	if len(v.blocks) > 1 {
		for b := range v.be {
			v.be[b] = make([]Evaluation, n)
		}
	}
	return v
}

// evaluate evaluates the points ix (in ascending order) in every window:
// replayed in full when full is set, else counted in one pass
// (cfs.CountLadder; a point whose count the pass cannot take exactly is
// replayed). Then it sets every point's intervals anew.
func (w *windows) evaluate(ix []int, full bool) error {
	if len(ix) == 0 {
		return nil
	}
	pts := make([]Point, len(ix))
	for k, i := range ix {
		pts[k] = w.points[i]
	}
	o := w.o
	run := func(d *Demand, o Options, into []Evaluation, what string) error {
		// A point saturated in this window is counted, never replayed: its
		// replay walks every sample with a queue that only grows.
		// Only counted, or all replayed as before where none is saturated.
		o.Full = func(int, Evaluation) bool { return false }
		if full {
			o.Full = nil
			for _, p := range pts {
				if saturated(d, p, o) {
					o.Full = func(k int, _ Evaluation) bool { return !saturated(d, pts[k], o) }
					break
				}
			}
		}
		evs, err := Evaluate(d, pts, o)
		if err != nil {
			if what != "" {
				return fmt.Errorf("%s: %w", what, err)
			}
			return err
		}
		for k, i := range ix {
			e := evs[k]
			e.Saturated = e.CountsOnly && saturated(d, pts[k], o)
			into[i] = e
		}
		return nil
	}
	type task struct {
		d    *Demand
		o    Options
		into []Evaluation
		what string
	}
	tasks := []task{{w.d, o, w.evs, ""}}
	if w.bounded {
		so := o
		so.stranded = true
		tasks = append(tasks, task{w.d, so, w.bound, ""})
	}
	tasks = append(tasks, task{w.lowerD, o, w.lower, ""}, task{w.higherD, o, w.higher, ""})
	if len(w.blocks) > 1 {
		for b, sub := range w.blocks {
			tasks = append(tasks, task{sub, o, w.be[b], fmt.Sprintf("block %d", b+1)})
		}
	}
	// The windows run at once, as many as there are CPUs to run them (each
	// spreads its phases too): one window's longest phase no longer holds
	// the others back. Each writes only its own evaluations, so the result
	// does not depend on the order they finish in; the first error in
	// window order is returned. A caller that takes the delay histograms
	// (Options.Delays) gets them one window at a time, as before.
	errs := make([]error, len(tasks))
	par := o.Workers
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	if o.before || o.Delays != nil {
		par = 1
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, par)
	for k, tk := range tasks {
		if par == 1 {
			errs[k] = run(tk.d, tk.o, tk.into, tk.what)
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[k] = run(tk.d, tk.o, tk.into, tk.what)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	for k, sub := range w.spikeD {
		if err := run(sub, o, w.sbe[k], fmt.Sprintf("block %d without its spike", w.spikeIx[k]+1)); err != nil {
			return err
		}
	}
	for _, i := range ix {
		w.full[i] = full || !w.evs[i].CountsOnly
	}
	w.ranges()
	return nil
}

// ranges sets every evaluation's intervals: the spread of the block
// estimates and of the level's, up to the slice bound, widened by
// Tolerance when the windows say why or there is one block. A point only
// counted has no delay interval.
func (w *windows) ranges() {
	for i := range w.evs {
		e := &w.evs[i]
		thr, del := Range{e.ThrottledRatio, e.ThrottledRatio}, Range{e.DelayP99Ms, e.DelayP99Ms}
		if len(w.blocks) > 1 {
			thr, del = Range{math.Inf(1), math.Inf(-1)}, Range{math.Inf(1), math.Inf(-1)}
			for b := range w.be {
				x := w.be[b][i]
				thr = Range{min(thr[0], x.ThrottledRatio), max(thr[1], x.ThrottledRatio)}
				del = Range{min(del[0], x.DelayP99Ms), max(del[1], x.DelayP99Ms)}
			}
			// The pooled estimate lies inside its interval.
			thr = Range{min(thr[0], e.ThrottledRatio), max(thr[1], e.ThrottledRatio)}
			del = Range{min(del[0], e.DelayP99Ms), max(del[1], e.DelayP99Ms)}
		}
		lo, hi := w.lower[i], w.higher[i]
		thr = Range{min(thr[0], lo.ThrottledRatio, hi.ThrottledRatio), max(thr[1], lo.ThrottledRatio, hi.ThrottledRatio)}
		del = Range{min(del[0], lo.DelayP99Ms, hi.DelayP99Ms), max(del[1], lo.DelayP99Ms, hi.DelayP99Ms)}
		if w.bound != nil {
			e.ThrottledRatioSliceBound = &w.bound[i].ThrottledRatio
			thr[1] = max(thr[1], w.bound[i].ThrottledRatio)
			del[1] = max(del[1], w.bound[i].DelayP99Ms)
		}
		if w.widen != "" || len(w.blocks) == 1 {
			thr = Range{max(0, thr[0]-Tolerance(thr[0])), min(1, thr[1]+Tolerance(thr[1]))}
			del = Range{del[0] * 0.7, del[1] * 1.3}
		}
		e.ThrottledRatioRange, e.DelayP99MsRange = &thr, &del
		e.DelayUnbounded = w.full[i] && !e.Saturated && w.saturatedSomewhere(i)
		if !w.full[i] || e.Saturated || e.DelayUnbounded {
			e.DelayP99MsRange = nil
		}
	}
}

// saturatedSomewhere reports whether point i is saturated in a window its
// interval spans.
func (w *windows) saturatedSomewhere(i int) bool {
	if w.lower[i].Saturated || w.higher[i].Saturated || (w.bound != nil && w.bound[i].Saturated) {
		return true
	}
	if len(w.blocks) > 1 {
		for b := range w.be {
			if w.be[b][i].Saturated {
				return true
			}
		}
	}
	return false
}

// all is every point's index.
func (w *windows) all() []int {
	ix := make([]int, len(w.points))
	for i := range ix {
		ix[i] = i
	}
	return ix
}

// LevelSpread is how far the mean use of the next window may lie from the
// sampled one's, as a share, where the blocks do not show more: a program
// at a fixed request rate used 1-2.5% more or less CPU in the minute after
// it was sampled (nginx and PostgreSQL in make validate-advise: a request's
// cost moves with the machine's caches and its other work). For demand as
// regular as that, whether a limit within a few percent of the mean
// throttles is decided by this drift, not by the sampled variation, and
// the interval says so.
const LevelSpread = 0.03

// scaled is d with its use scaled by f where the replay reads it (replayed
// as d is: Demand.Scaled), sharing d's samples.
func scaled(d *Demand, f float64) *Demand { return d.Scaled(f) }

// EvaluateIntervals is Evaluate with each evaluation's intervals set as
// Advise sets them: the spread over the window's time blocks, widened by
// Tolerance when d carries warnings (gaps, resets) or the window is shorter
// than two blocks.
func EvaluateIntervals(d *Demand, points []Point, o Options) ([]Evaluation, error) {
	widen := ""
	if len(d.Warnings) > 0 || blockCount(d.Duration()) < 2 {
		widen = "doubtful or short samples"
	}
	evs, _, _, _, err := evaluateBlocks(d, points, o, widen)
	return evs, err
}

// meetsAll reports whether point i meets t over the whole window, in
// every block and, when higher is given, with the use higher by the level
// (LevelOf).
func meetsAll(t Target, evs []Evaluation, be blockEvals, higher []Evaluation, i int) bool {
	if !t.Meets(evs[i]) || (higher != nil && !t.Meets(higher[i])) {
		return false
	}
	for b := range be {
		if len(be[b]) > 0 && !t.Meets(be[b][i]) {
			return false
		}
	}
	return true
}

// chi2Crit is the 0.999 quantile of the chi-squared distribution with df
// degrees of freedom (Wilson-Hilferty; within 1% for df >= 1 at this tail).
func chi2Crit(df int) float64 {
	k := float64(df)
	z := 3.0902 // the normal's 0.999 quantile
	v := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
	return k * v * v * v
}

// secondMeans returns d's use (cores) over consecutive 1 s windows.
func secondMeans(d *Demand) []float64 {
	out := make([]float64, 0, d.Duration()/time.Second+1) // no more: each spans 1 s or more
	j := 0
	for k := 1; k < len(d.At); k++ {
		if d.At[k]-d.At[j] >= time.Second {
			out = append(out, float64(d.Usage[k]-d.Usage[j])/float64(d.At[k]-d.At[j]))
			j = k
		}
	}
	return out
}

// BlockDemand is what the window's judgement needs of one block's demand:
// its span, mean and 10 ms peak use, and the mean use over each of its
// sub-windows in turn (1 s in advise; the agent's 15 s buckets), for the
// test of whether the blocks' use differs beyond its noise.
type BlockDemand struct {
	Seconds, MeanCores, MaxCores10ms float64
	Means                            []float64
}

// blockDemands describes advise's blocks.
func blockDemands(blocks []*Demand) []BlockDemand {
	out := make([]BlockDemand, len(blocks))
	for i, b := range blocks {
		out[i] = BlockDemand{Seconds: b.Duration().Seconds(), MeanCores: b.MeanCores(), MaxCores10ms: b.MaxCores(), Means: secondMeans(b)}
	}
	return out
}

// useDiffers tests whether the blocks' mean use differs beyond its noise
// within blocks (one-way analysis of variance of 1 s means, at 0.001), and
// returns the blocks whose mean lies more than three standard errors above
// the window's.
func useDiffers(blocks []BlockDemand) (high []int, differs bool) {
	var means []float64
	var within, grand float64
	var n, dfWithin int
	per := 0
	for _, b := range blocks {
		xs := b.Means
		if len(xs) < 2 {
			return nil, false
		}
		m := 0.0
		for _, x := range xs {
			m += x
		}
		m /= float64(len(xs))
		for _, x := range xs {
			within += (x - m) * (x - m)
		}
		means = append(means, m)
		grand += m * float64(len(xs))
		n += len(xs)
		dfWithin += len(xs) - 1
		per = len(xs)
	}
	grand /= float64(n)
	msWithin := within / float64(dfWithin)
	between := 0.0
	for _, m := range means {
		between += float64(per) * (m - grand) * (m - grand)
	}
	k := len(blocks) - 1
	// Within-block noise floor: a counter that reads 0 in every second has
	// no spread, and any difference would count.
	msWithin = max(msWithin, 1e-6)
	f := between / float64(k) / msWithin
	differs = f*float64(k) > chi2Crit(k)*1.25 // the 1.25 covers the finite within-block df
	se := math.Sqrt(msWithin / float64(per))
	for b, m := range means {
		if m > grand+3*se {
			high = append(high, b)
		}
	}
	return high, differs
}

// stationarity judges the blocks at point i (the limit the whole window
// would recommend): the window is non-stationary when some block fails the
// target there and the blocks differ beyond noise, in their throttled counts
// (chi-squared homogeneity at 0.001) or in their mean use (analysis of
// variance of 1 s means at 0.001). It returns the differing blocks: those
// whose use is well above the window's, and those failing the target.
func stationarity(t Target, blocks []BlockDemand, be blockEvals, i int) (differing []int, ok bool) {
	if len(be) < 2 || len(be[0]) == 0 {
		return nil, true
	}
	var failing []int
	for b := range be {
		if !t.Meets(be[b][i]) {
			failing = append(failing, b)
		}
	}
	if len(failing) == 0 {
		return nil, true
	}
	high, useDiff := useDiffers(blocks)
	var n, k float64
	for b := range be {
		n += be[b][i].Periods
		k += be[b][i].ThrottledPeriods
	}
	countDiff := false
	if p := k / max(n, 1); p > 0 && p < 1 {
		x2 := 0.0
		for b := range be {
			nb := be[b][i].Periods
			if nb <= 0 {
				continue
			}
			dv := be[b][i].ThrottledPeriods - nb*p
			x2 += dv * dv / (nb * p * (1 - p))
		}
		countDiff = x2 > chi2Crit(len(be)-1)
	}
	if !useDiff && !countDiff {
		return nil, true
	}
	in := map[int]bool{}
	for _, b := range append(high, failing...) {
		if !in[b] {
			in[b] = true
			differing = append(differing, b)
		}
	}
	sort.Ints(differing)
	return differing, false
}
