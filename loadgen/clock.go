package loadgen

import (
	"context"
	"time"
)

// Clock is the load generator's view of time, so that tests can run the
// schedulers on a fake clock.
type Clock interface {
	Now() time.Time
	// SleepUntil returns at t, or with ctx's error when ctx ends first.
	SleepUntil(ctx context.Context, t time.Time) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// SleepUntil waits with a timerfd (microsecond wake-ups) where the kernel has
// them, else with a time.Timer (which the Go runtime may fire up to 1 ms late).
func (realClock) SleepUntil(ctx context.Context, t time.Time) error {
	if ok, err := sleepPrecise(ctx, t); ok {
		return err
	}
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
