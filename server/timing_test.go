package server

import (
	"testing"
	"time"
)

func TestParseTiming(t *testing.T) {
	tests := []struct {
		in      string
		want    Timing
		wantErr bool
	}{
		{"queue;dur=0.5, cpu;dur=5, wall;dur=20", Timing{500 * time.Microsecond, 5 * time.Millisecond, 20 * time.Millisecond}, false},
		{`cpu;desc="thread";dur=1,wall;dur=2,queue;dur=0,db;dur=3`, Timing{0, time.Millisecond, 2 * time.Millisecond}, false},
		{"queue;dur=0, cpu;dur=5", Timing{}, true},
		{"queue;dur=1, wall;dur=2", Timing{time.Millisecond, -1, 2 * time.Millisecond}, false},
		{"queue;dur=x, cpu;dur=5, wall;dur=6", Timing{}, true},
		{"queue;dur=-1, cpu;dur=5, wall;dur=6", Timing{}, true},
		{"queue, cpu;dur=5, wall;dur=6", Timing{}, true},
		{"", Timing{}, true},
	}
	for _, tt := range tests {
		got, err := ParseTiming(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseTiming(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
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

func BenchmarkParseTiming(b *testing.B) {
	h := "queue;dur=0.012, cpu;dur=5.170, wall;dur=5.342"
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ParseTiming(h); err != nil {
			b.Fatal(err)
		}
	}
}
