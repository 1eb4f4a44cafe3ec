package workload

import (
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
