package advise

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// The knee as a range of limits. Near the knee the throttled share moves
// fast with the use (a tenth per 1% of use on a cliff-like demand), so an
// interval of shares at one limit is wide however good the model: the
// demand itself moves a few percent between windows. The same uncertainty
// read the other way round is small and useful: at which limits does the
// interval cross a share. For a share s, the optimistic end is the lowest
// limit whose interval's low end is at most s, the pessimistic end the
// lowest limit whose interval's high end is at most s.

// KneeShares returns the throttled shares the knee is given at, besides the
// target's own, highest first (a new slice at each call).
func KneeShares() []float64 { return []float64{0.5, 0.2, 0.05} }

// KneeRange is where the predicted throttled share of periods crosses
// Share, as a range of limits (without burst, at the recommendation's
// period), read from the evaluations' intervals (their
// throttled_periods_ratio_range; the point estimate where an evaluation has
// none, as in the agent's unaudited ladder).
type KneeRange struct {
	// Share is the throttled share of periods.
	Share float64 `json:"throttled_periods_ratio"`
	// Target marks the advice's target share.
	Target bool `json:"target,omitempty"`
	// LowMilli is the optimistic end: the lowest limit evaluated whose
	// interval's low end is at most Share. 0 when no limit evaluated gets
	// there (then NoUpperEnd is set too).
	LowMilli int64 `json:"limit_low_millicores,omitempty"`
	// LowAtLowest says LowMilli is the lowest limit evaluated: the crossing
	// may lie lower.
	LowAtLowest bool `json:"limit_low_at_lowest_evaluated,omitempty"`
	// HighMilli is the pessimistic end: the lowest limit evaluated whose
	// interval's high end is at most Share; 0 with NoUpperEnd.
	HighMilli int64 `json:"limit_high_millicores,omitempty"`
	// NoUpperEnd says the interval's high end stays above Share at every
	// limit evaluated, up to UpToMilli.
	NoUpperEnd bool `json:"no_upper_end,omitempty"`
	// UpToMilli is the highest limit evaluated.
	UpToMilli int64 `json:"evaluated_up_to_millicores"`
	// StepMilli is how far below each end the next limit evaluated lies
	// (the larger of the two ends'): each end is within a step above the
	// limit where its side of the interval crosses Share.
	StepMilli int64 `json:"step_millicores,omitempty"`
}

// kneeShares are the shares the knee is given at for target t (with
// defaults): KneeShares and the target's, highest first.
func kneeShares(t Target) (shares []float64, target int) {
	shares = KneeShares()
	if t.MaxThrottled < 1 && !slices.Contains(shares, t.MaxThrottled) {
		shares = append(shares, t.MaxThrottled)
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(shares)))
	target = -1
	if t.MaxThrottled < 1 {
		target = slices.Index(shares, t.MaxThrottled)
	}
	return shares, target
}

// kneeLadder is the evaluations of evs without burst at period, by limit
// (one per limit: the first seen).
func kneeLadder(evs []Evaluation, period time.Duration) []Evaluation {
	per := int64(period / time.Microsecond)
	seen := map[int64]bool{}
	var out []Evaluation
	for _, e := range evs {
		if e.BurstMilli != 0 || e.PeriodUsec != per || seen[e.LimitMilli] {
			continue
		}
		seen[e.LimitMilli] = true
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LimitMilli < out[j].LimitMilli })
	return out
}

// shareEnds is e's interval of throttled shares: its range, or its point
// estimate where it has none.
func shareEnds(e Evaluation) (lo, hi float64) {
	if r := e.ThrottledRatioRange; r != nil {
		return r[0], r[1]
	}
	return e.ThrottledRatio, e.ThrottledRatio
}

// kneeEnd is the index in rows of the lowest limit whose interval end
// (end 0: low, 1: high) is at most s; -1 when none is.
func kneeEnd(rows []Evaluation, s float64, end int) int {
	for i, e := range rows {
		lo, hi := shareEnds(e)
		if x := [2]float64{lo, hi}[end]; x <= s {
			return i
		}
	}
	return -1
}

// kneeOf is the knee at every share of kneeShares(t) from the evaluations
// without burst at period (the grid's and any evaluated for the knee
// alone); nil without any.
func kneeOf(evs []Evaluation, t Target, period time.Duration) []KneeRange {
	rows := kneeLadder(evs, period)
	if len(rows) == 0 {
		return nil
	}
	shares, target := kneeShares(t)
	out := make([]KneeRange, 0, len(shares))
	for k, s := range shares {
		kr := KneeRange{Share: s, Target: k == target, UpToMilli: rows[len(rows)-1].LimitMilli}
		step := func(i int) {
			if i > 0 {
				kr.StepMilli = max(kr.StepMilli, rows[i].LimitMilli-rows[i-1].LimitMilli)
			}
		}
		if i := kneeEnd(rows, s, 0); i >= 0 {
			kr.LowMilli, kr.LowAtLowest = rows[i].LimitMilli, i == 0
			step(i)
		}
		if i := kneeEnd(rows, s, 1); i >= 0 {
			kr.HighMilli = rows[i].LimitMilli
			step(i)
		} else {
			kr.NoUpperEnd = true
		}
		out = append(out, kr)
	}
	return out
}

// kneeStep is the resolution the knee is refined to near limit m: 1% of
// it, rounded up to 1, 2 or 5 times a power of ten millicores.
func kneeStep(m int64) int64 {
	x := max(float64(m)/100, 1)
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, f := range []float64{1, 2, 5, 10} {
		if f*p >= x-1e-9 {
			return int64(f * p)
		}
	}
	return int64(10 * p)
}

// kneeGaps returns the limits to evaluate next to refine the knee of evs
// (kneeOf) at period: for each end, the limit halfway between it and the
// next lower limit evaluated, on kneeStep's resolution, where the two lie
// more than a step apart; for an end at the lowest limit evaluated, a limit
// below it (the grid starts at the mean use, and the crossing of the
// interval's low end lies below it where the level may be lower, or where
// work is lost rather than delayed). Only limits the kernel takes
// (Point.Check); sorted, without repeats.
func kneeGaps(evs []Evaluation, t Target, period time.Duration) []int64 {
	rows := kneeLadder(evs, period)
	shares, _ := kneeShares(t)
	seen := map[int64]bool{}
	var out []int64
	add := func(m int64) {
		if !seen[m] && (Point{LimitMilli: m, Period: period}).Check() == nil {
			seen[m] = true
			out = append(out, m)
		}
	}
	for _, s := range shares {
		for end := range 2 {
			i := kneeEnd(rows, s, end)
			if i < 0 {
				continue
			}
			hi := rows[i].LimitMilli
			st := kneeStep(hi)
			if i == 0 {
				// Twice the last step down (a tenth at least): the end
				// is bracketed in a few rounds however far below it lies.
				d := hi / 10
				if len(rows) > 1 {
					d = max(d, 2*(rows[1].LimitMilli-hi))
				}
				if below := (hi - d) / st * st; below > 0 && below < hi {
					add(below)
				}
				continue
			}
			lo := rows[i-1].LimitMilli
			if hi-lo <= st {
				continue
			}
			mid := (lo + hi) / 2 / st * st
			if mid <= lo {
				mid += st
			}
			if mid < hi {
				add(mid)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// KneeText is the knee in a line: "the knee: 50% throttled at
// 320m-345m, 20% at 350m-375m, 5% (the target) at 365m-420m".
func KneeText(a *Advice) string {
	if len(a.Knee) == 0 {
		return ""
	}
	parts := make([]string, len(a.Knee))
	for i, k := range a.Knee {
		share := fmtShare(k.Share)
		if i == 0 {
			share += " throttled"
		}
		if k.Target {
			share += " (the target)"
		}
		switch {
		case k.LowMilli == 0:
			parts[i] = fmt.Sprintf("%s above every limit evaluated (up to %s)", share, formatMilli(k.UpToMilli))
		case k.NoUpperEnd:
			parts[i] = fmt.Sprintf("%s at %s (the interval's high end stays above %s up to %s)", share, k.Limits(), fmtShare(k.Share), formatMilli(k.UpToMilli))
		default:
			parts[i] = share + " at " + k.Limits()
		}
	}
	step := int64(0)
	for _, k := range a.Knee {
		step = max(step, k.StepMilli)
	}
	tail := ""
	if step > 0 {
		tail = fmt.Sprintf("; evaluated %s apart there", formatMilli(step))
	}
	return "the knee: " + strings.Join(parts, ", ") + " (each from the lowest limit whose interval's low end is at or under the share to the lowest whose high end is" + tail + ")"
}

// Limits writes k's range of limits: 320m-345m, <=320m-345m (the
// optimistic end at the lowest limit evaluated), 400m-none (no upper
// end), none (no limit evaluated gets there), or one limit where both ends
// meet (320m, <=10m).
func (k KneeRange) Limits() string {
	if k.LowMilli <= 0 {
		return "none"
	}
	lo := formatMilli(k.LowMilli)
	if k.LowAtLowest {
		lo = "<=" + lo
	}
	if k.NoUpperEnd {
		return lo + "-none"
	}
	if k.HighMilli == k.LowMilli {
		return lo
	}
	return lo + "-" + formatMilli(k.HighMilli)
}

// fmtShare writes a share as a percentage without needless decimals.
func fmtShare(s float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", 100*s), "0"), ".") + "%"
}

// KneeLadder is the ladder a knee's shares are measured on (the
// validation harness, the slice replay's kernel test): limits 10m apart,
// period long, from d's mean use rounded down to 10m (at least 10m) up to
// upToMilli, and at least 100m past the lowest.
func KneeLadder(d *Demand, upToMilli int64, period time.Duration) []Point {
	lo := max(int64(d.MeanCores()*100)*10, 10)
	var out []Point
	for l := lo; l <= max(upToMilli, lo+100); l += 10 {
		out = append(out, Point{LimitMilli: l, Period: period})
	}
	return out
}

// Nearest returns the index of the evaluation in evs whose throttled share
// lies nearest share, the first of equals (-1: evs is empty).
func Nearest(evs []Evaluation, share float64) int {
	best := -1
	for i, e := range evs {
		if best < 0 || math.Abs(e.ThrottledRatio-share) < math.Abs(evs[best].ThrottledRatio-share) {
			best = i
		}
	}
	return best
}
