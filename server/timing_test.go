package server

import (
	"testing"
	"time"
)

func TestTiming(t *testing.T) {
	if s := (Timing{Queue: 1, CPU: 5, Wall: 20}).Stall(); s != 14 {
		t.Errorf("Stall = %d, want 14", s)
	}
	if s := (Timing{CPU: 5, Wall: 4}).Stall(); s != 0 {
		t.Errorf("Stall of a clock-skewed timing = %d, want 0", s)
	}
	if s := (Timing{CPU: -1, Wall: 4}).Stall(); s != -1 {
		t.Errorf("Stall without CPU = %d, want -1", s)
	}
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{0, "0.000"}, {1500 * time.Nanosecond, "0.001"}, {12345678 * time.Nanosecond, "12.345"}, {3 * time.Second, "3000.000"}, {-2 * time.Millisecond, "-2.000"}} {
		if got := string(appendMs(nil, tt.d)); got != tt.want {
			t.Errorf("appendMs(%s) = %q, want %q", tt.d, got, tt.want)
		}
	}
	if got := serverTiming(time.Millisecond, -1, 2*time.Millisecond); got != "queue;dur=1.000, wall;dur=2.000" {
		t.Errorf("serverTiming without cpu = %q", got)
	}
	// What the server writes, it reads back.
	if got, err := ParseTiming(serverTiming(time.Millisecond, 2*time.Millisecond, 3*time.Millisecond)); err != nil || got.Wall != 3*time.Millisecond {
		t.Errorf("round trip: %+v %v", got, err)
	}
}
