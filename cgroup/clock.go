package cgroup

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Clock paces a sampling loop: it wakes at the absolute instants start +
// n*Every, so that samples do not drift however long each one takes; a
// wake-up that comes more than half an interval late counts the instants
// it skipped as missed and goes on from the last one passed (no burst of
// catch-up samples). It sleeps in clock_nanosleep on the thread that runs
// the calling goroutine (it does not lock the goroutine to it), so that no
// other thread has to wake it (a Go timer would), and passes
// through the scheduler once after each sleep (runtime.Gosched): since Go
// 1.26 a goroutine in a system call keeps its P, and a loop that never
// reschedules keeps one scheduling tick, so the runtime's sysmon sees the
// same goroutine run for over 10 ms, takes its P back from the sleep and
// starts polling every 20 us again, each time (docs/fleet.md measures what
// that cost). A wait longer than LongWait (the agent's coarse grid, 100 ms
// apart while no container is hot) first parks on a Go timer until
// LongWaitTail before the instant, then sleeps the rest in clock_nanosleep:
// a goroutine that sleeps in a system call keeps its P, sysmon takes a P
// back from a system call older than 10 ms whenever another P is idle, and
// each time it does it polls every 20 us again, dozens of wake-ups per
// take (docs/fleet.md measures what that cost the idle agent); a parked
// goroutine holds no P. It is the one sampling loop of watch (top, the agent),
// advise's live sampling and the server's self-sampling. Wait and Skip are for one
// goroutine; Counts is safe from any.
type Clock struct {
	// Every is the interval between instants.
	Every time.Duration
	start time.Time
	base  int64 // CLOCK_MONOTONIC at start, ns
	n     int64 // the last instant waited for
	// taken counts the waits that returned, missed the instants late
	// wake-ups skipped, planned those WaitFor skipped by plan.
	taken, missed, planned atomic.Int64
}

// NewClock returns a clock whose instant 0 is start (its instants are start
// + n*every); every must be positive.
func NewClock(start time.Time, every time.Duration) *Clock {
	var now unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
	return &Clock{Every: every, start: start, base: now.Nano() - int64(time.Since(start))}
}

// Start is the time of instant 0.
func (c *Clock) Start() time.Time { return c.start }

// Wait sleeps until the next instant and returns its time since start;
// ok is false once ctx is done. A wake-up more than half an interval late
// returns the time it woke instead (the sample is taken then), counts the
// instants it skipped, and the next Wait aims at the instant after it.
func (c *Clock) Wait(ctx context.Context) (at time.Duration, ok bool) {
	return c.WaitFor(ctx, c.n+1)
}

// WaitFor is Wait for instant n (after the last one waited for): the
// instants before it are skipped by plan, not missed (a sampler that has
// nothing to read at them).
func (c *Clock) WaitFor(ctx context.Context, n int64) (at time.Duration, ok bool) {
	if ctx.Err() != nil {
		return 0, false
	}
	every := int64(c.Every)
	n = max(n, c.n+1)
	c.planned.Add(n - c.n - 1)
	var now unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
	if late := now.Nano() - (c.base + n*every); late >= 0 {
		c.taken.Add(1)
		if late > every/2 {
			// Late: the sample is taken now and stands for the instants
			// passed; the next wait aims at the one after now.
			c.missed.Add((late + every/2) / every)
			c.n = (now.Nano() - c.base) / every
			return time.Duration(now.Nano() - c.base), true
		}
		c.n = n
		return time.Duration(n * every), true
	}
	if d := c.base + n*every - now.Nano(); d > int64(LongWait) {
		time.Sleep(time.Duration(d) - LongWaitTail) // see Clock
	}
	t := unix.NsecToTimespec(c.base + n*every)
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &t, nil) == unix.EINTR {
	}
	runtime.Gosched() // a new scheduling tick: see Clock
	if ctx.Err() != nil {
		return 0, false
	}
	c.n = n
	c.taken.Add(1)
	return time.Duration(n * every), true
}

// LongWait is the longest wait Clock sleeps in clock_nanosleep alone;
// a longer one parks on a Go timer until LongWaitTail before its instant
// (a Go timer may come a few milliseconds late; the tail in
// clock_nanosleep, well under sysmon's 10 ms, keeps the instant exact).
const (
	LongWait     = 20 * time.Millisecond
	LongWaitTail = 5 * time.Millisecond
)

// Planned is how many instants WaitFor skipped by plan.
func (c *Clock) Planned() int64 { return c.planned.Load() }

// Instant is the index of the last instant waited for.
func (c *Clock) Instant() int64 { return c.n }

// Counts returns how many waits returned (samples taken) and how many
// instants late wake-ups skipped.
func (c *Clock) Counts() (taken, missed int64) { return c.taken.Load(), c.missed.Load() }

// Loop calls fn at instant 0 and at every instant after it (see Clock), from
// this goroutine (not locked to its thread: see Clock), until ctx ends or fn returns
// false. at is the instant's time since the loop started (the time of the
// wake-up where it came late), missed the instants skipped so far. It
// returns the clock's counts.
func Loop(ctx context.Context, every time.Duration, fn func(at time.Duration, missed int64) bool) (taken, missed int64) {
	c := NewClock(time.Now(), every)
	c.taken.Add(1)
	if !fn(0, 0) {
		return c.Counts()
	}
	for {
		at, ok := c.Wait(ctx)
		if !ok || !fn(at, c.missed.Load()) {
			return c.Counts()
		}
	}
}
