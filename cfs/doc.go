// Package cfs is the Linux kernel's CPU bandwidth control (CFS quota and
// period) as one model: a group's quota refilled every period, unused quota
// carried over as burst up to quota + burst, runtime handed to CPUs in 5 ms
// slices (Slice, SliceSlack), throttling when the pool is dry, and the
// counters cpu.stat shows (Bandwidth, Stat). The simulator runs Bandwidth
// inside its multi-core machine; Replay runs measured demand through it at
// any quota, burst and phase of the period; Reconstruct rebuilds the demand
// a throttled group's counters hide (Backlog).
//
// It imports nothing of throttlelab but units, so that anything that needs
// the quota's what-if (advise, the node agent, check) can have it without
// the simulator, the load generator or the report.
//
// Replaying cumulative CPU use sampled every 10 ms through a 20 ms quota per
// 100 ms period, at the period's phase 0:
//
//	d := cfs.FromSamples(at, usage) // times and cumulative CPU time
//	if err := d.Check(100 * time.Millisecond); err != nil {
//		return err
//	}
//	var delays cfs.DelayHist
//	r := cfs.Cut(d, 100*time.Millisecond, 0).Replay(cfs.Setting{Quota: 20 * time.Millisecond, Cores: d.Bound()}, &delays, nil)
//	fmt.Println(r.Stat.ThrottledPeriods, "of", r.Stat.Periods, "periods throttled; p99 delay", time.Duration(delays.Quantile(0.99)))
package cfs
