package main

import (
	"fmt"
	"time"

	"github.com/throttlelab/throttlelab/settle"
	"github.com/throttlelab/throttlelab/verdict"
)

// firstLook is the budget each measured row gets in the first round: so
// little that it stops after its first judging look (a pilot always goes
// on to it, and a first judging look always runs: settle.Rule.Decide), so
// that every row has its first verdict before any row spends more.
const firstLook = time.Second

// candidate is a measured row still open after a look, stopped for its
// budget: what its next look would cost and what settling it would
// likely cost (the repeats of the first look of its schedule with its
// repeats needed, verdict.Verdict.RepeatsNeeded, at its time per repeat).
type candidate struct {
	row            int
	next, toSettle time.Duration
}

// candidateOf is row i's candidate, ok false when it has no next look (it
// settled, or stopped for the rule, or was disturbed).
func candidateOf(i int, o outcome) (candidate, bool) {
	n := nextLook(o)
	if n == 0 || o.verdict == nil || o.verdict.Outcome != verdict.Inconclusive {
		return candidate{}, false
	}
	per := perRepeatOf(o)
	need := max(lookFor(o.verdict.Settle.First, o.verdict.RepeatsNeeded)-o.verdict.Repeats, n)
	return candidate{row: i, next: per * time.Duration(n), toSettle: per * time.Duration(need)}, true
}

// lookFor is the repeats of the first look of the schedule that starts at
// first (settle.Default's) with at least need repeats, or its last look;
// need itself when the schedule is not known (first 0).
func lookFor(first, need int) int {
	if first < 1 {
		return need
	}
	sch := settle.Default.Schedule(first, verdict.MaxRepeatsEstimate)
	for _, r := range sch {
		if r >= need {
			return r
		}
	}
	return sch[len(sch)-1]
}

// pick is the candidate to spend the next look on, with left of the total
// to spend: the one likeliest to settle soonest (least toSettle; ties to
// the cheaper next look, then the earlier row) among those whose next
// look fits in left. -1: none fits.
func pick(cands []candidate, left time.Duration) int {
	best := -1
	for i, c := range cands {
		if c.next > left {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := cands[best]
		if c.toSettle < b.toSettle || (c.toSettle == b.toSettle && (c.next < b.next || (c.next == b.next && c.row < b.row))) {
			best = i
		}
	}
	return best
}

// noTime is a row's note when the total ran out before it settled: how
// long its next look and settling it would likely take, and what was left.
func noTime(c candidate, left time.Duration) string {
	return fmt.Sprintf("not enough time for this row: its next look takes about %s and settling it about %s, %s of the budget was left",
		c.next.Round(time.Second), c.toSettle.Round(time.Second), left.Round(time.Second))
}
