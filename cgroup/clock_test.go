package cgroup

import (
	"context"
	"testing"
	"time"
)

// TestClockWaitsForEachInstant: Wait returns at or after each multiple of
// Every since the start, never before, with the instant's own time (no
// drift); WaitFor skips instants by plan without counting them; after a
// stall past several instants it goes on from the last instant passed (no
// burst of catch-up samples); and it returns false once ctx is done.
func TestClockWaitsForEachInstant(t *testing.T) {
	const every = 5 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	c := NewClock(start, every)
	for i := range 10 {
		at, ok := c.Wait(ctx)
		if !ok {
			t.Fatal("wait ended before its context")
		}
		if since := time.Since(start); since < time.Duration(i+1)*every {
			t.Errorf("wait %d returned after %s, before instant %d (%s)", i, since, i+1, time.Duration(i+1)*every)
		}
		if at%every != 0 && at < time.Duration(i+1)*every+every/2 {
			t.Errorf("wait %d returned %s: an on-time wake-up returns its instant's time", i, at)
		}
	}
	n := c.Instant()
	if _, ok := c.WaitFor(ctx, n+3); !ok || c.Instant() < n+3 {
		t.Fatalf("WaitFor(%d) reached instant %d", n+3, c.Instant())
	}
	time.Sleep(4 * every) // a stall past four instants
	t0 := time.Now()
	for range 4 {
		if _, ok := c.Wait(ctx); !ok {
			t.Fatal("wait ended before its context")
		}
	}
	if took := time.Since(t0); took < 2*every {
		t.Errorf("four waits after a stall took %s: caught up on the instants missed instead of going on from the last", took)
	}
	cancel()
	if _, ok := c.Wait(ctx); ok {
		t.Error("wait went on after its context ended")
	}
}

// TestClockCountsMissed: a wake-up more than half an interval late counts
// the instants it skipped and returns the time it woke; one on time counts
// none and returns its instant's time.
func TestClockCountsMissed(t *testing.T) {
	ctx := context.Background()
	// Started an hour and a quarter ago with one instant an hour: instant
	// 1 is 15 min late, nearer its instant than the next (counted as 0).
	c := NewClock(time.Now().Add(-75*time.Minute), time.Hour)
	at, ok := c.WaitFor(ctx, 1)
	if !ok || at != time.Hour {
		t.Errorf("a wake-up a quarter interval late returned %s, %v; want its instant, 1h0m0s", at, ok)
	}
	if taken, missed := c.Counts(); taken != 1 || missed != 0 {
		t.Errorf("Counts() = %d, %d; want 1 taken, 0 missed", taken, missed)
	}
	// Started 50 s ago with one instant a second: instant 1 comes 49 s
	// late, 49 instants skipped, and the sample is now.
	c = NewClock(time.Now().Add(-50*time.Second), time.Second)
	at, ok = c.Wait(ctx)
	if !ok || at < 50*time.Second || at > 51*time.Second {
		t.Errorf("a wake-up 49 s late returned %s, %v; want the time it woke, about 50 s", at, ok)
	}
	if taken, missed := c.Counts(); taken != 1 || missed != 49 {
		t.Errorf("Counts() = %d, %d; want 1 taken, 49 missed", taken, missed)
	}
	if c.Instant() != 50 {
		t.Errorf("after a late wake-up at 50 s the clock is at instant %d, want 50 (the last passed)", c.Instant())
	}
}

// TestLoopStopsAndCounts: Loop calls fn at instant 0 and on until fn says
// stop, and counts every call.
func TestLoopStopsAndCounts(t *testing.T) {
	var ats []time.Duration
	taken, _ := Loop(context.Background(), time.Millisecond, func(at time.Duration, _ int64) bool {
		ats = append(ats, at)
		return len(ats) < 5
	})
	if taken != 5 || len(ats) != 5 || ats[0] != 0 {
		t.Fatalf("Loop: %d taken, times %v; want 5 from 0", taken, ats)
	}
	for i := 1; i < len(ats); i++ {
		if ats[i] <= ats[i-1] {
			t.Errorf("Loop's times go backwards at %d: %v", i, ats)
		}
	}
}

// TestClockCountsPlannedSkips: instants WaitFor skips by plan are counted
// apart from those a late wake-up misses.
func TestClockCountsPlannedSkips(t *testing.T) {
	c := NewClock(time.Now(), time.Millisecond)
	if _, ok := c.WaitFor(context.Background(), 5); !ok {
		t.Fatal("WaitFor ended before its context")
	}
	if p := c.Planned(); p != 4 {
		t.Errorf("Planned() = %d after WaitFor(5) from instant 0, want 4", p)
	}
}

// TestClockLongWaitNeverEarly: a wait longer than LongWait (parked on a Go
// timer, then the tail in clock_nanosleep) returns at or after its
// instant, with the instant's time, as a short one does.
func TestClockLongWaitNeverEarly(t *testing.T) {
	const every = 10 * time.Millisecond
	start := time.Now()
	c := NewClock(start, every)
	for i := range 3 {
		n := c.Instant() + int64(LongWait/every) + 2 // 40 ms ahead
		at, ok := c.WaitFor(context.Background(), n)
		if !ok {
			t.Fatal("wait ended before its context")
		}
		if since := time.Since(start); since < time.Duration(n)*every {
			t.Errorf("long wait %d returned after %s, before its instant %s", i, since, time.Duration(n)*every)
		}
		if c.Instant() < n || (at != time.Duration(n)*every && at < time.Duration(n)*every+every/2) {
			t.Errorf("long wait %d for instant %d: at %s, instant %d", i, n, at, c.Instant())
		}
	}
}
