package workload

import (
	"context"
	"testing"
	"time"
)

func TestBurnDeterministic(t *testing.T) {
	a, b := Burn(1000), Burn(1000)
	if a != b || a == Burn(1001) {
		t.Error("Burn is not a deterministic function of its iteration count")
	}
}

func TestCalibrateBurn(t *testing.T) {
	c, err := CalibrateBurn(1_000_000, 3)
	if err != nil {
		t.Fatal(err)
	}
	// Generous bounds: any CPU from the last twenty years runs this loop at
	// 10 to 100000 iterations per microsecond... per ms: 1e4 to 1e8.
	if c.IterationsPerMs < 1e4 || c.IterationsPerMs > 1e8 || !c.Measured {
		t.Errorf("calibration %+v is implausible", c)
	}
	if n := c.Iterations(5 * time.Millisecond); c.Duration(n) < 4900*time.Microsecond || c.Duration(n) > 5100*time.Microsecond {
		t.Errorf("Iterations and Duration are not inverse: 5ms -> %d -> %s", n, c.Duration(n))
	}
	if _, err := CalibrateBurn(0, 1); err == nil {
		t.Error("zero chunk accepted")
	}
}

func TestOnThreadCountsCPU(t *testing.T) {
	cpu := OnThread(func() { sink.Add(Burn(5_000_000)) })
	if cpu <= 0 {
		t.Errorf("thread CPU over a 5M-iteration burn = %s, want > 0", cpu)
	}
	// Sleeping costs no CPU: the clock must not count wall time.
	idle := OnThread(func() { time.Sleep(50 * time.Millisecond) })
	if idle > 25*time.Millisecond {
		t.Errorf("thread CPU over a 50ms sleep = %s, want far less", idle)
	}
}

func TestRunBurst(t *testing.T) {
	var got []BurstCycle
	err := RunBurst(context.Background(), BurstConfig{Workers: 2, Busy: 20 * time.Millisecond, Sleep: time.Millisecond, Cycles: 3},
		func(c BurstCycle) { got = append(got, c) })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d cycles, want 3", len(got))
	}
	for i, c := range got {
		var sum uint64
		for _, n := range c.Iterations {
			if n == 0 {
				t.Errorf("cycle %d: a worker did no work", i)
			}
			sum += n
		}
		if c.Cycle != i || len(c.Iterations) != 2 || c.Total != sum || c.BusyWallMs < 20 {
			t.Errorf("cycle %d: %+v", i, c)
		}
	}
	if RunBurst(context.Background(), BurstConfig{Workers: 0, Busy: time.Millisecond}, func(BurstCycle) {}) == nil {
		t.Error("0 workers accepted")
	}
}

func TestRunBurstStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := RunBurst(ctx, BurstConfig{Workers: 1, Busy: time.Millisecond, Sleep: time.Hour}, func(BurstCycle) { n++; cancel() })
	if err != nil || n != 1 {
		t.Errorf("RunBurst after cancel: err %v, %d cycles, want nil and 1", err, n)
	}
}

func TestNoiseStops(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := Noise(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if Noise(context.Background(), 0) == nil {
		t.Error("0 threads accepted")
	}
}
