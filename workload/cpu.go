package workload

import (
	"runtime"
	"time"
)

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
