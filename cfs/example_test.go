package cfs_test

import (
	"fmt"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
)

// A group that runs one CPU for 50 ms every second, sampled every 10 ms,
// replayed through a 20 ms quota per 100 ms period: each burst runs 20 ms,
// waits for two refills, and throttles two periods.
func Example() {
	var at, usage []time.Duration
	var used time.Duration
	for t := time.Duration(0); t <= 3*time.Second; t += 10 * time.Millisecond {
		if t%time.Second > 0 && t%time.Second <= 50*time.Millisecond {
			used += 10 * time.Millisecond
		}
		at, usage = append(at, t), append(usage, used)
	}
	d := cfs.FromSamples(at, usage)
	if err := d.Check(100 * time.Millisecond); err != nil {
		fmt.Println(err)
		return
	}
	var delays cfs.DelayHist
	r := cfs.Cut(d, 100*time.Millisecond, 0).Replay(cfs.Setting{Quota: 20 * time.Millisecond, Cores: d.Bound()}, &delays, nil)
	fmt.Printf("%d of %d periods throttled, longest delay %s\n", r.Stat.ThrottledPeriods, r.Stat.Periods, time.Duration(delays.Max()).Round(time.Millisecond))
	// Output:
	// 6 of 12 periods throttled, longest delay 160ms
}
