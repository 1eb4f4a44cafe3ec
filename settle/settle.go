package settle

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/throttlelab/throttlelab/stats"
)

// Rule is a group-sequential stopping rule with a Pocock-type boundary: a
// few looks planned in advance, every one judging at the same level, that
// level chosen so that the chance of any look's interval missing the truth
// over all of them together is Alpha.
type Rule struct {
	// Alpha is the false-verdict rate of one condition over every look
	// together: the chance that a conclusive verdict is on the wrong side
	// of the truth.
	Alpha float64
	// MaxLooks is the most judging looks; each judges at Level.
	MaxLooks int
	// Growth is the factor by which the repeats grow from one look to the
	// next (at least one more repeat each look).
	Growth float64
	// Shrink is the least an open condition's interval must shrink over
	// two looks to keep going: width at look k above Shrink times its width
	// at look k-2, for every open condition, is "stopped shrinking". With
	// Growth 1.6 an interval that shrinks as 1/sqrt(repeats) reaches 0.63
	// in two looks.
	Shrink float64
	// Boundary is the normal quantile every look judges at (Level): a
	// group-sequential boundary for Alpha over MaxLooks looks. Zero: the
	// Bonferroni split.
	Boundary float64
}

// Default is the rule run and reproduce use: 5% over at most 3 judging
// looks, the repeats growing by 60% each look (after a pilot at the quick
// variants' one repeat, looks at 3, 5 and 8), each look at Pocock's
// boundary for 4 looks, 2.361 (98.18%): Pocock's own boundary for 3 looks
// of a normal statistic, 2.289, is too narrow for the t statistic of 3 to 8
// repeats, which is further from normal than it assumes. settle_test.go
// measures the rate; docs/methodology.md has the figures.
var Default = Rule{Alpha: 0.05, MaxLooks: 3, Growth: 1.6, Shrink: 0.9, Boundary: pocock[3]}

// Long is the rule for cheap repeats (sim): 5% over at most 5 judging
// looks, the repeats growing by 60% (1, 3, 5, 8, 13, 21 from one repeat),
// each look at the normal quantile 2.5 (98.76%). Pocock's own boundary for
// 5 looks, 2.413, is too narrow for t intervals of so few repeats, as for
// Default; settle_test.go measures the rate at 2.5 and docs/methodology.md
// has the figures. Against Default it settles more often for wider
// intervals at every look, which suits repeats that take seconds rather
// than a minute.
var Long = Rule{Alpha: 0.05, MaxLooks: 5, Growth: 1.6, Shrink: 0.9, Boundary: 2.5}

// pocock are Pocock's constant two-sided boundaries at a 5% rate for 1 to
// 5 equally spaced looks of a normal statistic (Jennison and Turnbull,
// Group Sequential Methods, table 2.1).
var pocock = []float64{1.960, 2.178, 2.289, 2.361, 2.413}

// Level is the confidence level of every look's intervals: two-sided at
// the normal quantile Boundary. Without one it is the Bonferroni split
// 1 - Alpha/MaxLooks, which holds for any rate and number of looks but is
// conservative when the looks share their repeats.
func (r Rule) Level() float64 {
	if r.Boundary <= 0 {
		return 1 - r.Alpha/float64(max(r.MaxLooks, 1))
	}
	return 1 - math.Erfc(r.Boundary/math.Sqrt2)
}

// Rate is the rule's false-verdict rate in words, as the cell states it.
func (r Rule) Rate() string {
	return fmt.Sprintf("false-verdict rate at most %g%% per condition over up to %d looks (%s: each look's interval at %s%%)",
		100*r.Alpha, r.MaxLooks, r.boundaryWords(), trim(100*r.Level()))
}

// boundaryWords names how Level was chosen.
func (r Rule) boundaryWords() string {
	if r.Boundary <= 0 {
		return "Bonferroni"
	}
	return "a Pocock-type boundary"
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
// schedule has no further look, or, from the first judging look on (a pilot
// look always goes on to it), when the next look's repeats, predicted at
// the slowest repeat so far, would not finish within the budget.
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
	// A pilot look judges nothing: stopping there for the budget would
	// spend it for no verdict, so the first judging look always runs.
	if last.Repeats >= MinJudge && spent+slowest*time.Duration(next-last.Repeats) > budget {
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
