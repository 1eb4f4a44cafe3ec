package workload

import (
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ThreadCPU returns the CPU time consumed so far by the calling OS thread. Call it
// with the goroutine locked to its thread (runtime.LockOSThread), or the two
// readings of a measurement may come from different threads.
//
// The thread CPU clock has no vDSO fast path: every reading is a real system
// call. It never blocks, so it is made as a raw system call, without telling the
// Go scheduler, which saves that bookkeeping on every request.
func ThreadCPU() time.Duration {
	var ts unix.Timespec
	_, _, errno := syscall.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_THREAD_CPUTIME_ID, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
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
