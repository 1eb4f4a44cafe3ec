// Package settle is the stopping rule of repeats until settled: how many
// repeats each look at a preset's check has, at what interval level each
// look judges, and when to stop adding repeats (every check conclusive, the
// time budget spent, the intervals no longer shrinking, or the rule's last
// look). It is pure: no clocks, no files; the caller measures and passes
// the durations in.
//
// The rule is group-sequential with a Pocock-type boundary: at most
// MaxLooks judging looks, fixed in advance (Schedule; a pilot look at fewer
// than MinJudge repeats judges nothing), every one judging at the same
// Level, chosen so that the chance that any look's interval misses the true
// value of a condition is at most Alpha over all the looks together: 5%
// with Default, as for one plain 95% interval. A plain 95% re-test after
// every repeat would instead give each look its own 5% chance, and the
// chances add up; a Bonferroni split (each look at 1 - Alpha/MaxLooks)
// holds too but wastes most of the rate, because the looks share their
// repeats. A condition with a figure from each repeat is judged on the t
// interval of those (RepeatInterval, the configs of a repeat paired);
// one with only bootstrap draws on their interval widened for few repeats
// (Interval, Widen). With a Prior, the run-to-run spread of earlier runs
// on the same machine, the t interval pools its variance with the
// prior's (PooledInterval), unless a one-sided F test at GuardLevel finds
// the look's own spread too large for it. RepeatsNeeded estimates the
// repeats at which such a t interval would likely clear its threshold,
// counting the quantile's fall with the degrees of freedom.
//
// Example:
//
//	r := settle.Default
//	looks := r.Schedule(1, 100)          // [1 3 5 8]: a pilot, then 3 looks
//	iv, _ := settle.RepeatInterval(perRepeat, point, r.Level())
//	d := r.Decide(seen, looks, 10*time.Minute) // Stop, Reason, Next
package settle
