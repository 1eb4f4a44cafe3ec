package cfs

import (
	"testing"
	"time"
)

// TestBandwidthRefill walks the pool through periods with the use given per
// period and checks the pool and counters after each refill against the
// kernel's rules worked out by hand.
func TestBandwidthRefill(t *testing.T) {
	ms := func(n float64) float64 { return n * 1e6 }
	type period struct {
		take      float64 // runtime taken this period, ns
		throttled bool
		// after the refill:
		pool                             float64
		periods, throttledP, bursts, bus uint64
		running                          bool
	}
	cases := []struct {
		name                 string
		quota, period, burst time.Duration
		periods              []period
	}{
		{"no burst: unused quota is lost; the timer stops after an idle period", 20 * time.Millisecond, 100 * time.Millisecond, 0, []period{
			{take: ms(5), pool: ms(20), periods: 1, running: true},
			{take: ms(20), throttled: true, pool: ms(20), periods: 2, throttledP: 1, running: true},
			{take: 0, pool: ms(20), periods: 3, throttledP: 1, running: true},
			{take: 0, pool: ms(20), periods: 4, throttledP: 1, running: false},
		}},
		{"burst carries over, capped at quota+burst", 20 * time.Millisecond, 100 * time.Millisecond, 15 * time.Millisecond, []period{
			{take: ms(5), pool: ms(35), periods: 1, running: true},
			{take: ms(1), pool: ms(35), periods: 2, running: true},
			{take: ms(30), pool: ms(25), periods: 3, bursts: 1, bus: 10000, running: true},
			{take: 0, pool: ms(35), periods: 4, bursts: 1, bus: 10000, running: false},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBandwidth(tc.quota, tc.period, tc.burst)
			if !b.Start() || b.Start() {
				t.Fatal("Start: want true once, then false")
			}
			for i, p := range tc.periods {
				if p.take > 0 {
					b.Take(p.take)
				}
				running := b.Refill(p.throttled)
				s := b.Stat
				if b.Pool != p.pool || s.Periods != p.periods || s.ThrottledPeriods != p.throttledP || s.Bursts != p.bursts || s.BurstUsec != p.bus || running != p.running {
					t.Errorf("period %d: pool %.0f periods %d throttled %d bursts %d burst_us %d running %v; want %.0f %d %d %d %d %v",
						i, b.Pool, s.Periods, s.ThrottledPeriods, s.Bursts, s.BurstUsec, running, p.pool, p.periods, p.throttledP, p.bursts, p.bus, p.running)
				}
			}
		})
	}
}

func TestBandwidthNextTick(t *testing.T) {
	b := NewBandwidth(time.Millisecond, 100*time.Millisecond, 0)
	for _, tc := range []struct{ now, phase, want time.Duration }{
		{0, 30 * time.Millisecond, 30 * time.Millisecond},
		{30 * time.Millisecond, 30 * time.Millisecond, 130 * time.Millisecond},
		{250 * time.Millisecond, 30 * time.Millisecond, 330 * time.Millisecond},
		{0, 0, 100 * time.Millisecond},
	} {
		if got := b.NextTick(tc.now, tc.phase); got != tc.want {
			t.Errorf("NextTick(%s, %s) = %s, want %s", tc.now, tc.phase, got, tc.want)
		}
	}
}
