// Package verdict judges a preset's check: conditions (a figure, its 95%
// interval and the threshold it must clear) each come out reproduced, not
// reproduced or inconclusive, and Combine sums them into the Verdict that a
// results directory keeps as verdict.json. Package presets computes the
// conditions from what was measured; record reads and writes verdict.json;
// the report and the runner show it. A ratio (LogScale) is judged by
// the stopping rule on the t interval of the logs of its per-repeat
// values; an interval within a condition's Indifference of its threshold
// holds within the margin at every look. The package imports nothing of
// throttlelab but stats and settle (the stopping rule JudgeAt judges by),
// so every reader of a verdict can reach it.
//
// Example:
//
//	c := verdict.Condition{Name: "p99 limited / unlimited", Value: 3.1,
//		CI95: &stats.Interval{2.4, 3.9}, Op: ">=", Threshold: 1.5}
//	out, need, err := verdict.Combine([]verdict.Condition{c}, 5)
//	// out == verdict.Reproduced, need == 0, err == nil
package verdict
