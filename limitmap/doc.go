// Package limitmap draws where CPU limits hurt: for one experiment it
// simulates a grid of the limited config's per-instance limit against the
// offered load (or the burst allowance), and per cell compares the p99
// latency with the unlimited reference at the same load, the throttled
// share of periods (nr_throttled / nr_periods) and the mean CPU use. Cells
// whose limits add up to less than the offered work are marked overloaded
// and get no ratio. A few cells can also be measured on real cgroups
// through any runner backend, and are recorded beside their simulation.
//
// Example:
//
//	limits, _ := limitmap.ParseLimitRange("100m:1:10")
//	rates, _ := limitmap.ParseRateRange("20:200:10")
//	m, err := limitmap.Simulate(ctx, e, limitmap.Options{
//		Limits: limits, Axis: limitmap.AxisRate, Loads: rates,
//		Cores: 2, Parallel: 2, Seed: 1})
//	...
//	limitmap.WriteJSON(f, m)
//	limitmap.WriteHTML(g, m)
//	limitmap.WriteText(os.Stdout, m)
package limitmap
