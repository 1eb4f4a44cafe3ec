package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ThrottleSlack bounds how far below its quota a group's use since a CFS
// period began can be when the group is throttled in that period, so that a
// reader of v1 cpuacct.usage can tell when nr_throttled cannot have moved
// and leave cpu.stat unread (top's Options.StatByNeed). The kernel throttles
// a group's run queue on a CPU only when the runtime that CPU holds is spent
// and the group's pool is empty (throttle_cfs_rq asks the pool once more);
// the pool holds at least the quota after each refill (a burst only adds to
// it), and hands it out in slices (kernel.sched_cfs_bandwidth_slice_us). So
// at a throttle the whole quota was handed out since the period began, and
// the group's use since then (cpuacct.usage: update_curr charges it and the
// runtime together) is at least the quota less what the other CPUs hold
// unspent (a slice each at most) less what the group ran past its runtime
// before a refill paid it back: the time to the next update of its
// accounting, one scheduler tick, 10 ms at the coarsest (HZ 100). The
// slack is cpus slices and that tick.
func ThrottleSlack(slice time.Duration, cpus int) time.Duration {
	return time.Duration(cpus)*slice + 10*time.Millisecond
}

// ReadThrottleSlack is ThrottleSlack for the host under root: its
// kernel.sched_cfs_bandwidth_slice_us and its possible CPUs (every CPU a
// group can hold runtime on, online or not).
func ReadThrottleSlack(root string) (time.Duration, error) {
	sp := filepath.Join(root, "proc/sys/kernel/sched_cfs_bandwidth_slice_us")
	b, err := os.ReadFile(sp)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", sp, err)
	}
	us, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || us <= 0 {
		return 0, fmt.Errorf("%s: %q is not a positive number of microseconds", sp, strings.TrimSpace(string(b)))
	}
	cpus, err := countCPUs(root, "possible")
	if err != nil {
		return 0, err
	}
	return ThrottleSlack(time.Duration(us)*time.Microsecond, cpus), nil
}
