package cfs

import (
	"testing"
	"time"
)

// TestCoresBoundIgnoresALateReading: one busy thread sampled every 10 ms,
// one reading 4 ms late (its clock read before the preemption), is one CPU;
// the single interval's 1.4 cores made it two before. Two threads busy for
// 30 ms are two.
func TestCoresBoundIgnoresALateReading(t *testing.T) {
	var one CoresBound
	for i := range 20 {
		du := 10 * time.Millisecond
		switch i {
		case 7:
			du += 4 * time.Millisecond // the late reading
		case 8:
			du -= 4 * time.Millisecond // the next interval returns it
		}
		one.Add(10*time.Millisecond, du)
	}
	if c := one.Cores(); c != 1 {
		t.Errorf("one thread with a late reading: bound %d, want 1", c)
	}
	var two CoresBound
	for i := range 20 {
		du := 2 * time.Millisecond
		if i >= 5 && i < 8 {
			du = 20 * time.Millisecond
		}
		two.Add(10*time.Millisecond, du)
	}
	if c := two.Cores(); c != 2 {
		t.Errorf("two threads for 30 ms: bound %d, want 2", c)
	}
	var idle CoresBound
	if c := idle.Cores(); c != 1 {
		t.Errorf("no samples: bound %d, want 1", c)
	}
}
