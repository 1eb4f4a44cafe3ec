package workload

import (
	"context"
	"errors"
	"sync"
	"time"
)

// BurstConfig describes the periodic burst worker of the sched-bench study:
// Workers goroutines each spin for Busy, then all sleep for Sleep, in cycles.
type BurstConfig struct {
	Workers int
	Busy    time.Duration
	Sleep   time.Duration
	// Cycles stops after this many cycles; 0 runs until the context ends.
	Cycles int
}

// BurstCycle is the outcome of one cycle.
type BurstCycle struct {
	// Cycle counts from 0.
	Cycle int `json:"cycle"`
	// Start is when the busy phase began.
	Start time.Time `json:"start"`
	// BusyWallMs is how long the busy phase lasted on the wall clock (all workers).
	BusyWallMs float64 `json:"busy_wall_ms"`
	// Iterations holds each worker's loop iterations in the busy phase: its goodput.
	Iterations []uint64 `json:"iterations"`
	// Total is the sum of Iterations.
	Total uint64 `json:"total"`
	// CPUMs holds each worker's thread CPU time in the busy phase.
	CPUMs []float64 `json:"cpu_ms"`
}

// burstChunk is the number of loop iterations between clock checks: small enough
// that a worker overshoots its deadline by microseconds, large enough that reading
// the clock costs nothing measurable.
const burstChunk = 2000

// RunBurst runs the burst worker and calls report after each cycle, from one
// goroutine. It returns nil when Cycles are done or ctx is cancelled.
func RunBurst(ctx context.Context, cfg BurstConfig, report func(BurstCycle)) error {
	if cfg.Workers < 1 || cfg.Busy <= 0 || cfg.Sleep < 0 {
		return errors.New("burst needs workers >= 1, busy > 0 and sleep >= 0")
	}
	for c := 0; cfg.Cycles == 0 || c < cfg.Cycles; c++ {
		if ctx.Err() != nil {
			return nil
		}
		start := time.Now()
		deadline := start.Add(cfg.Busy)
		cyc := BurstCycle{Cycle: c, Start: start, Iterations: make([]uint64, cfg.Workers), CPUMs: make([]float64, cfg.Workers)}
		var wg sync.WaitGroup
		for w := 0; w < cfg.Workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var n uint64
				cpu := OnThread(func() {
					// Spin until the wall-clock deadline: under a CPU limit the worker
					// gets fewer iterations done in the same wall time.
					var acc uint64
					for time.Now().Before(deadline) {
						acc += Burn(burstChunk)
						n += burstChunk
					}
					sink.Add(acc)
				})
				cyc.Iterations[w] = n
				cyc.CPUMs[w] = float64(cpu) / float64(time.Millisecond)
			}()
		}
		wg.Wait()
		cyc.BusyWallMs = float64(time.Since(start)) / float64(time.Millisecond)
		for _, n := range cyc.Iterations {
			cyc.Total += n
		}
		report(cyc)
		if cfg.Cycles != 0 && c == cfg.Cycles-1 {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(cfg.Sleep):
		}
	}
	return nil
}

// Noise keeps threads goroutines spinning, each on its own OS thread, until ctx is
// cancelled: the CPU hog of neighbour experiments.
func Noise(ctx context.Context, threads int) error {
	if threads < 1 {
		return errors.New("noise needs threads >= 1")
	}
	var wg sync.WaitGroup
	for i := 0; i < threads; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			OnThread(func() {
				var acc uint64
				for ctx.Err() == nil {
					acc += Burn(100000)
				}
				sink.Add(acc)
			})
		}()
	}
	wg.Wait()
	return nil
}
