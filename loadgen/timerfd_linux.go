package loadgen

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Go's runtime parks an idle process in epoll_wait with a timeout in whole
// milliseconds, and rounds any shorter wait up to 1 ms: a time.Timer fires up to
// a millisecond late. An open loop counts latency from the intended send time,
// so that lateness would be charged to the server. A timerfd is a kernel
// high-resolution timer that becomes readable when it expires; read through the
// netpoller, it wakes epoll_wait at once, whatever its timeout. Waiting on one
// costs no CPU and no extra thread.

// timerfds keeps idle timerfds for reuse: an open loop sleeps once per request.
var timerfds = struct {
	mu   sync.Mutex
	free []*os.File
}{}

const maxIdleTimerfds = 64

func getTimerfd() (*os.File, error) {
	timerfds.mu.Lock()
	if n := len(timerfds.free); n > 0 {
		f := timerfds.free[n-1]
		timerfds.free = timerfds.free[:n-1]
		timerfds.mu.Unlock()
		return f, nil
	}
	timerfds.mu.Unlock()
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	// Non-blocking, so os.NewFile registers it with the netpoller.
	return os.NewFile(uintptr(fd), "timerfd"), nil
}

func putTimerfd(f *os.File) {
	timerfds.mu.Lock()
	defer timerfds.mu.Unlock()
	if len(timerfds.free) < maxIdleTimerfds {
		timerfds.free = append(timerfds.free, f)
		return
	}
	f.Close()
}

// sleepPrecise waits until t with a timerfd, or returns ctx's error. It reports
// false if timerfds are unavailable, and the caller falls back to a time.Timer.
func sleepPrecise(ctx context.Context, t time.Time) (bool, error) {
	d := time.Until(t)
	if d <= 0 {
		return true, ctx.Err()
	}
	f, err := getTimerfd()
	if err != nil {
		return false, nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return false, nil
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(d.Nanoseconds())}
	var setErr error
	if err := rc.Control(func(fd uintptr) { setErr = unix.TimerfdSettime(int(fd), 0, &spec, nil) }); err != nil || setErr != nil {
		f.Close()
		return false, nil
	}
	// A cancelled context unblocks the read through its deadline.
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Now()) })
	var buf [8]byte
	_, rerr := f.Read(buf[:])
	cancelled := !stop()
	if rerr != nil || cancelled {
		// Disarmed or not, a file that saw a deadline is not reused.
		f.Close()
		if err := ctx.Err(); err != nil {
			return true, err
		}
		if errors.Is(rerr, os.ErrDeadlineExceeded) {
			return true, ctx.Err()
		}
		return false, nil
	}
	putTimerfd(f)
	return true, nil
}
