package advise

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// A window of a few blocks judges each block on its own, so one short
// burst of use (a GC, a cache refill, a request far costlier than the
// rest) that throttles a handful of periods makes its block miss the
// target, and the recommendation would size the limit as if that burst
// came in every block. One event in the window says nothing about how
// often it recurs: the recommendation counts it once, over the whole
// window (which must meet the target with it), judges its block without
// it, and the advice says so, what its block alone would need, and how
// long to sample to see it recur.

// maxSpikeWindow is the longest window the single-spike rule looks at:
// its blocks are then 25 s or shorter, where one burst can decide a
// block; longer blocks hold too many periods for one burst to.
const maxSpikeWindow = 10 * time.Minute

// spikeSigmas is how many robust standard deviations of the sample
// intervals' use above the window's median a spike's intervals lie (and
// at least twice the median).
const spikeSigmas = 8

// Spike is a single short burst in the window: the only run of sample
// intervals (at most one period long) whose use lies far above the rest.
type Spike struct {
	StartSeconds float64 `json:"start_seconds"`
	EndSeconds   float64 `json:"end_seconds"`
	PeakCores    float64 `json:"peak_cores"`
	// LevelCores is the window's median use over a sample interval, what
	// the spike's intervals are judged without it.
	LevelCores float64 `json:"level_cores"`
	// ExcessCPUSeconds is the spike's CPU time above that level.
	ExcessCPUSeconds float64 `json:"excess_cpu_seconds"`
	// BlockThrottledRatio is the throttled share of its block, with it, at
	// the recommendation.
	BlockThrottledRatio float64 `json:"block_throttled_periods_ratio_at_recommendation"`
	// BlockLimitMilli is the limit that meets the target in every block
	// with the spike counted in its block (what the advice would be if it
	// recurred in every block); 0 when none on the grid does.
	BlockLimitMilli int64 `json:"block_limit_millicores,omitempty"`

	lo, hi int // its intervals: samples lo+1..hi
}

// SpikeFree is the blocks holding a spike, judged without it: what Decide
// takes for those blocks (Evaluated.Spike).
type SpikeFree struct {
	Spike Spike
	// Blocks are the indices of the blocks the spike falls in; Evaluations
	// and Demands are theirs without the spike, in the same order.
	Blocks      []int
	Evaluations [][]Evaluation
	Demands     []BlockDemand
}

// spikeOf finds a single spike in d: the sample intervals whose use lies
// more than spikeSigmas robust standard deviations (1.4826 median absolute
// deviations) above the median and at least twice it, when they form one
// run (gaps under a period joined) no longer than a period. ok is false
// when there are none, or more than one run: a burst seen more than once
// is demand the blocks judge as it came.
func spikeOf(d *Demand, period time.Duration) (Spike, bool) {
	n := len(d.At)
	if n < 3 {
		return Spike{}, false
	}
	rate := make([]float64, n) // rate[k]: interval k-1..k
	for k := 1; k < n; k++ {
		rate[k] = float64(d.Usage[k]-d.Usage[k-1]) / float64(d.At[k]-d.At[k-1])
	}
	sorted := slices.Clone(rate[1:])
	slices.Sort(sorted)
	med := sorted[len(sorted)/2]
	dev := make([]float64, len(sorted))
	for i, x := range sorted {
		dev[i] = math.Abs(x - med)
	}
	slices.Sort(dev)
	sigma := 1.4826 * dev[len(dev)/2]
	over := med + max(spikeSigmas*sigma, med)
	if over <= 0 {
		return Spike{}, false // an idle window: any use would count
	}
	lo, hi := -1, -1
	for k := 1; k < n; k++ {
		if rate[k] <= over {
			continue
		}
		if hi >= 0 && d.At[k-1]-d.At[hi] >= period {
			return Spike{}, false // a second run
		}
		if lo < 0 {
			lo = k - 1
		}
		hi = k
	}
	if lo < 0 || d.At[hi]-d.At[lo] > period {
		return Spike{}, false
	}
	s := Spike{StartSeconds: d.At[lo].Seconds(), EndSeconds: d.At[hi].Seconds(), LevelCores: med, lo: lo, hi: hi}
	for k := lo + 1; k <= hi; k++ {
		s.PeakCores = max(s.PeakCores, rate[k])
		s.ExcessCPUSeconds += max(rate[k]-med, 0) * (d.At[k] - d.At[k-1]).Seconds()
	}
	return s, true
}

// withoutSpike is d with the use of the spike's intervals at its level.
func withoutSpike(d *Demand, s Spike) *Demand {
	usage := make([]time.Duration, len(d.Usage))
	var cut time.Duration // use taken out so far
	for k := range d.Usage {
		if k > s.lo && k <= s.hi {
			du := d.Usage[k] - d.Usage[k-1]
			cut += du - min(du, time.Duration(s.LevelCores*float64(d.At[k]-d.At[k-1])))
		}
		usage[k] = d.Usage[k] - cut
	}
	return d.Derive(d.At, usage, 0)
}

// spikeBlocks returns the indices of the blocks (of n over d) the spike
// falls in, and those blocks of d without it.
func spikeBlocks(d *Demand, s Spike, n int) ([]int, []*Demand) {
	free := splitBlocks(withoutSpike(d, s), n)
	var ix []int
	var out []*Demand
	span := d.Duration()
	for b := range free {
		start, end := span*time.Duration(b)/time.Duration(n), span*time.Duration(b+1)/time.Duration(n)
		if d.At[s.hi] > start && d.At[s.lo] < end {
			ix, out = append(ix, b), append(out, free[b])
		}
	}
	return ix, out
}

// judgeSpike returns the blocks and their demands with the spike's blocks
// taken without it, for the recommendation and the window's judgement.
func judgeSpike(be blockEvals, blocks []BlockDemand, sf *SpikeFree) (blockEvals, []BlockDemand) {
	if sf == nil || len(be) < 2 || len(sf.Blocks) != len(sf.Evaluations) || len(sf.Blocks) != len(sf.Demands) {
		return be, blocks
	}
	jb, jd := slices.Clone(be), slices.Clone(blocks)
	for k, b := range sf.Blocks {
		if b < len(jb) && b < len(jd) {
			jb[b], jd[b] = sf.Evaluations[k], sf.Demands[k]
		}
	}
	return jb, jd
}

// spikeWarning says what the spike did and what the advice did with it.
func spikeWarning(s Spike, w Window, r Recommendation) string {
	var blocks []string
	for _, b := range w.Blocks {
		if b.StartSeconds < s.EndSeconds && b.EndSeconds > s.StartSeconds {
			blocks = append(blocks, fmt.Sprintf("%.0f-%.0f s", b.StartSeconds, b.EndSeconds))
		}
	}
	need := "no limit on the grid"
	if s.BlockLimitMilli > 0 {
		need = formatMilli(s.BlockLimitMilli)
	}
	return fmt.Sprintf("one spike at %.2f-%.2f s (%.2f cores at its peak, %.3f CPU-seconds above the window's level of %.3f cores) throttles its block (%s) %.1f%% at %s: one event in %s cannot say how often it recurs, so the recommendation counts it once over the window and judges its block without it; were it to recur in every block of %s, set %s; sample for %s or longer to see how often it comes",
		s.StartSeconds, s.EndSeconds, s.PeakCores, s.ExcessCPUSeconds, s.LevelCores, joinAnd(blocks), 100*s.BlockThrottledRatio, formatMilli(r.LimitMilli),
		fmtSeconds(w.Seconds), fmtSeconds(w.BlockSeconds), need, fmtSeconds(max(5*w.Seconds, 600)))
}

// joinAnd joins words with commas and a final "and".
func joinAnd(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	out := s[0]
	for _, x := range s[1 : len(s)-1] {
		out += ", " + x
	}
	return out + " and " + s[len(s)-1]
}
