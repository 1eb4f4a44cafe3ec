package workload

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"
)

// Burn runs the CPU-burn loop for n iterations and returns a value that depends on
// every iteration, so the compiler cannot remove the loop. An iteration is one
// 64-bit multiply-add of a linear congruential generator (a dependency chain, so it
// does not speed up with wider CPUs) and costs about a nanosecond.
func Burn(n uint64) uint64 {
	x := n | 1
	for i := uint64(0); i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// BurnCalibration converts CPU time into burn iterations on this machine.
type BurnCalibration struct {
	// IterationsPerMs is how many Burn iterations one millisecond of CPU runs.
	IterationsPerMs float64 `json:"iterations_per_ms"`
	// Measured reports whether it was measured (true) or given (false).
	Measured bool `json:"measured"`
}

// Iterations returns the number of iterations that take d of CPU time.
func (c BurnCalibration) Iterations(d time.Duration) uint64 {
	return uint64(c.IterationsPerMs * float64(d) / float64(time.Millisecond))
}

// Duration returns the CPU time that n iterations take.
func (c BurnCalibration) Duration(n uint64) time.Duration {
	return time.Duration(float64(n) / c.IterationsPerMs * float64(time.Millisecond))
}

// sink receives the results of burn loops so the compiler cannot drop them.
var sink atomic.Uint64

// CalibrateBurn measures the burn loop's speed on the calling thread: rounds runs
// of chunk iterations each, timed with the thread's CPU clock (so throttling and
// preemption do not distort it), and the median speed is taken.
func CalibrateBurn(chunk uint64, rounds int) (BurnCalibration, error) {
	if chunk == 0 || rounds < 1 {
		return BurnCalibration{}, errors.New("calibration needs chunk > 0 and rounds >= 1")
	}
	speeds := make([]float64, 0, rounds)
	for r := 0; r < rounds; r++ {
		cpu := OnThread(func() { sink.Add(Burn(chunk)) })
		if cpu <= 0 {
			return BurnCalibration{}, fmt.Errorf("thread CPU clock did not advance over %d iterations", chunk)
		}
		speeds = append(speeds, float64(chunk)/(float64(cpu)/float64(time.Millisecond)))
	}
	slices.Sort(speeds)
	return BurnCalibration{IterationsPerMs: speeds[len(speeds)/2], Measured: true}, nil
}
