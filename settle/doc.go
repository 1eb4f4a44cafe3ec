// Package settle is the stopping rule of repeats until settled: how many
// repeats each look at a preset's check has, at what interval level each
// look judges, and when to stop adding repeats (every check conclusive, the
// time budget spent, the intervals no longer shrinking, or the rule's last
// look). It is pure: no clocks, no files; the caller measures and passes
// the durations in.
//
// The rule is group-sequential with a Bonferroni split: at most MaxLooks
// judging looks, fixed in advance (Schedule; a pilot look at fewer than
// MinJudge repeats judges nothing), each judging at the level
// 1 - Alpha/MaxLooks on intervals widened for few repeats (Widen). Whatever the looks see, and wherever it stops, the
// chance that any look's interval misses the true value of a condition is at
// most Alpha (the union bound), so a condition's false-verdict rate over the
// whole sequence is at most Alpha: 5% with Default, as for one plain 95%
// interval. A plain 95% re-test after every repeat would instead give each
// look its own 5% chance, and the chances add up.
//
// Example:
//
//	r := settle.Default
//	looks := r.Schedule(1, 100)          // [1 3 5 8 12 18 27 41 62]: a pilot, then 8 looks
//	iv, _ := settle.Interval(draws, point, r.Level())
//	iv = settle.Widen(iv, point, repeats, r.Level())
//	d := r.Decide(seen, 10*time.Minute)  // Stop, Reason, Next
package settle
