package workload

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// ThreadCPU returns the CPU time consumed so far by the calling OS thread. Call it
// with the goroutine locked to its thread (runtime.LockOSThread), or the two
// readings of a measurement may come from different threads.
func ThreadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// OnThread runs f with the goroutine locked to its OS thread and returns the CPU
// time that thread consumed while running f. Time the thread spent runnable but
// not running (throttled by CFS bandwidth control, or preempted) is not counted.
func OnThread(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := ThreadCPU()
	f()
	return ThreadCPU() - start
}
