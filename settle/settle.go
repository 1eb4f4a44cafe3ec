package settle

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/throttlelab/throttlelab/stats"
)

// Rule is a group-sequential stopping rule with a Bonferroni split of the
// false-verdict rate over a fixed maximum number of looks.
type Rule struct {
	// Alpha is the false-verdict rate of one condition over every look
	// together: the chance that a conclusive verdict is on the wrong side
	// of the truth.
	Alpha float64
	// MaxLooks is the most looks; each judges at 1 - Alpha/MaxLooks.
	MaxLooks int
	// Growth is the factor by which the repeats grow from one look to the
	// next (at least one more repeat each look).
	Growth float64
	// Shrink is the least an open condition's interval must shrink over
	// two looks to keep going: width at look k above Shrink times its width
	// at look k-2, for every open condition, is "stopped shrinking". With
	// Growth 1.5 an interval that shrinks as 1/sqrt(repeats) reaches 0.67
	// in two looks.
	Shrink float64
}

// Default is the rule run, sim and reproduce use: 5% over at most 8 looks
// (each at 99.375%), the repeats growing by half each look.
var Default = Rule{Alpha: 0.05, MaxLooks: 8, Growth: 1.5, Shrink: 0.9}

// Level is the confidence level of every look's intervals.
func (r Rule) Level() float64 { return 1 - r.Alpha/float64(r.MaxLooks) }

// Rate is the rule's false-verdict rate in words, as the cell states it.
func (r Rule) Rate() string {
	return fmt.Sprintf("false-verdict rate at most %g%% per condition over up to %d looks (Bonferroni: each look's interval at %s%%)",
		100*r.Alpha, r.MaxLooks, trim(100*r.Level()))
}

func trim(v float64) string { return fmt.Sprintf("%.4g", v) }

// Schedule is the repeats at each look, fixed before the first: first
// (the spec's own repeats), then growing by Growth (at least one more each
// look), at most most repeats (the last look at most, when the growth
// would pass it). A first under MinJudge is a pilot look that judges
// nothing: the looks after it start at MinJudge, and MaxLooks counts the
// judging looks only, so the pilot spends none of Alpha.
func (r Rule) Schedule(first, most int) []int {
	first = max(first, 1)
	var out []int
	if first < MinJudge && first < most {
		out = append(out, first)
		first = MinJudge
	}
	first = min(first, most)
	judged := 1
	out = append(out, first)
	for judged < r.MaxLooks {
		last := out[len(out)-1]
		next := max(int(math.Ceil(float64(last)*r.Growth)), last+1)
		if next > most {
			if last < most {
				out = append(out, most) // the cap is the last look
			}
			break
		}
		out = append(out, next)
		judged++
	}
	return out
}

// Interval is the level interval (0.95 for 95%) of bootstrap draws (NaNs
// left out), widened to contain point as stats.PercentileInterval widens
// its 95% interval; ok is false without draws.
func Interval(draws []float64, point, level float64) (stats.Interval, bool) {
	v := make([]float64, 0, len(draws))
	for _, d := range draws {
		if !math.IsNaN(d) && !math.IsInf(d, 0) {
			v = append(v, d)
		}
	}
	if len(v) == 0 {
		return stats.Interval{}, false
	}
	slices.Sort(v)
	tail := 100 * (1 - level) / 2
	iv := stats.Interval{stats.Percentile(v, tail), stats.Percentile(v, 100-tail)}
	if !math.IsNaN(point) && !math.IsInf(point, 0) {
		iv[0], iv[1] = min(iv[0], point), max(iv[1], point)
	}
	return iv, true
}

// Look is what one look at the check saw.
type Look struct {
	// Repeats is how many repeats the look judged.
	Repeats int
	// Open are the widths of the intervals of the conditions still
	// inconclusive at the look's level, by condition index (absent: the
	// condition is conclusive). No open condition: the check is settled.
	Open map[int]float64
	// Took is how long the look's new repeats took to run.
	Took time.Duration
	// Added is how many repeats the look added (all of them at the first).
	Added int
}

// Reason is why the repeats stopped.
type Reason string

// The reasons to stop.
const (
	Settled  Reason = "settled"
	Budget   Reason = "budget spent"
	Stalled  Reason = "interval stopped shrinking"
	LastLook Reason = "last look of the rule"
	// Disturbed is the caller's reason: other work on the host disturbed
	// a run, and no further repeat undoes that.
	Disturbed Reason = "disturbed by other work"
)

// Decision is what to do after a look: stop for Reason, or run Next
// repeats in all.
type Decision struct {
	Stop   bool
	Reason Reason
	Next   int
}

// Decide says what to do after the looks so far (at least one), given the
// schedule (Schedule) and the time budget for all the looks: stop when the
// last look is settled, when its open intervals stopped shrinking, when the
// schedule has no further look, or when the next look's repeats, predicted
// at the slowest repeat so far, would not finish within the budget.
func (r Rule) Decide(looks []Look, schedule []int, budget time.Duration) Decision {
	k := len(looks)
	last := looks[k-1]
	switch {
	case len(last.Open) == 0:
		return Decision{Stop: true, Reason: Settled}
	case k >= len(schedule):
		return Decision{Stop: true, Reason: LastLook}
	case k >= 3 && looks[k-3].Repeats >= MinJudge && r.stalled(looks[k-3].Open, last.Open):
		return Decision{Stop: true, Reason: Stalled}
	}
	next := schedule[k]
	var spent, slowest time.Duration
	for _, l := range looks {
		spent += l.Took
		if l.Added > 0 {
			slowest = max(slowest, l.Took/time.Duration(l.Added))
		}
	}
	if spent+slowest*time.Duration(next-last.Repeats) > budget {
		return Decision{Stop: true, Reason: Budget}
	}
	return Decision{Next: next}
}

// stalled says whether every condition open now was open two looks before
// with an interval not wider than now's by more than 1/Shrink.
func (r Rule) stalled(before, now map[int]float64) bool {
	for i, w := range now {
		b, ok := before[i]
		if !ok || w < r.Shrink*b {
			return false
		}
	}
	return true
}

// Words says how many repeats it took and why it stopped ("settled after 4
// repeats", "budget spent after 6 repeats: still inconclusive").
func Words(reason Reason, repeats int) string {
	s := fmt.Sprintf("%s after %d repeats", reason, repeats)
	if reason != Settled {
		s += ": still inconclusive"
	}
	return s
}
