package loadgen

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/testenv"
)

// maxMedianLateness bounds the median wake-up lateness of the precise sleep.
// It is generous (above what an idle machine and a busy shared one show:
// docs/performance.md gives the wake-up lag measured) but well under what
// the fallback it replaces gives: a time.Timer the runtime may round up to a whole
// millisecond, and an open loop charges every microsecond of lateness to the
// server.
const maxMedianLateness = 2 * time.Millisecond

// TestPreciseSleep checks the shape of the precise sleep: it never returns
// before its due time, its median lateness over 200 sleeps stays under
// maxMedianLateness, and a cancelled context ends a long sleep at once.
func TestPreciseSleep(t *testing.T) {
	ctx := context.Background()
	const n = 200
	var late []time.Duration
	for i := 0; i < n; i++ {
		due := time.Now().Add(300 * time.Microsecond)
		ok, err := sleepPrecise(ctx, due)
		if !ok {
			testenv.Unavailable(t, "no timerfd on this kernel: the precise sleep falls back to time.Timer")
		}
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		if now.Before(due) {
			t.Fatalf("woke %s early", due.Sub(now))
		}
		late = append(late, now.Sub(due))
	}
	slices.Sort(late)
	median, p90 := late[n/2], late[n*9/10]
	t.Logf("lateness over %d sleeps of 300 us: median %s, p90 %s, max %s", n, median, p90, late[n-1])
	if median > maxMedianLateness {
		t.Errorf("median lateness %s over %d sleeps, want under %s (p90 %s)", median, n, maxMedianLateness, p90)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := sleepPrecise(cctx, time.Now().Add(time.Hour)); done <- err }()
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("cancelled sleep returned %v, want context.Canceled", err)
	}
}
