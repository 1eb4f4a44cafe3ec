package loadgen

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestPreciseSleep checks the shape, not the time: sleeping until t never
// returns before t, and a cancelled context ends a long sleep at once.
func TestPreciseSleep(t *testing.T) {
	ctx := context.Background()
	var late []time.Duration
	for i := 0; i < 50; i++ {
		due := time.Now().Add(300 * time.Microsecond)
		ok, err := sleepPrecise(ctx, due)
		if !ok {
			t.Skip("no timerfd on this kernel")
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
	t.Logf("lateness over 50 sleeps of 300 us: median %s, max %s", late[25], late[49])
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := sleepPrecise(cctx, time.Now().Add(time.Hour)); done <- err }()
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("cancelled sleep returned %v, want context.Canceled", err)
	}
}
