//go:build !linux

package workload

import (
	"time"

	"golang.org/x/sys/unix"
)

// ThreadCPU returns the CPU time consumed so far by the calling OS thread (see
// the Linux version; elsewhere through the ordinary clock_gettime wrapper).
func ThreadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
