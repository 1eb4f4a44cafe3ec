package sim

import (
	"encoding/json"
	"math/rand/v2"
	"time"

	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/workload"
)

// burstWorker is the periodic burst process: its workers spin for busy (wall
// time), then all sleep; its goodput is the CPU each worker got while busy,
// in burn iterations.
type burstWorker struct {
	name        string
	threads     []*Thread
	busy, sleep time.Duration
	costs       Costs
	cycles      []workload.BurstCycle
	cpuAtStart  []float64
	cycle       int
	start       time.Duration // of the busy phase
}

// startBurst starts a burst process whose first busy phase begins at first.
func startBurst(m *Machine, g *Group, name string, workers int, busy, sleep, first time.Duration, c Costs) *burstWorker {
	b := &burstWorker{name: name, busy: busy, sleep: sleep, costs: c}
	for i := 0; i < max(workers, 1); i++ {
		b.threads = append(b.threads, m.NewThread(g, noise{}))
	}
	m.At(first, b, 0)
	return b
}

// burstPhase is the share of their sleep the burst processes of a repeat
// have done when the load starts, from the repeat's seed (a stream of its
// own, so the groups' period phases draw what they always drew).
func burstPhase(seed uint64) float64 {
	return rand.New(rand.NewPCG(seed, 0xb0257)).Float64()
}

// handle starts a busy phase (arg 0), ends it at its deadline (arg 1), or
// ends it for the workers that were throttled at the deadline (arg 2). A
// worker checks the clock between chunks of work, so one that is throttled
// at the deadline runs on until its group's next period lets it finish the
// chunk: the busy phase overruns to that period boundary, and the sleep
// starts there. A sleep that is a whole number of periods then starts the
// next busy phase on the group's period grid, as measured on F7's burst
// workers (docs/simulator.md, "Burst processes").
func (b *burstWorker) handle(m *Machine, arg int64) {
	switch arg {
	case 0:
		b.start = m.Now()
		b.cpuAtStart = b.cpuAtStart[:0]
		for _, t := range b.threads {
			m.advance(m.cores[max(t.core, 0)])
			b.cpuAtStart = append(b.cpuAtStart, t.CPU)
			m.Wake(t, time.Hour)
		}
		m.At(m.Now()+b.busy, b, 1)
		return
	case 1:
		m.AdvanceAll()
		var throttled *Thread
		for _, t := range b.threads {
			if t.state == parked {
				throttled = t
				continue
			}
			m.Block(t)
		}
		if throttled != nil {
			// The refill at or after now unthrottles it (at now when the
			// deadline falls on a period boundary).
			m.At(throttled.g.NextTick(m.Now()-1, throttled.g.phase), b, 2)
			return
		}
	case 2:
		m.AdvanceAll()
	}
	cyc := workload.BurstCycle{Cycle: b.cycle, Start: Epoch.Add(b.start), BusyWallMs: float64(m.Now()-b.start) / 1e6}
	for i, t := range b.threads {
		cpu := (t.CPU - b.cpuAtStart[i]) / 1e6
		it := uint64(cpu * b.costs.BurnIterationsPerMs)
		cyc.Iterations = append(cyc.Iterations, it)
		cyc.CPUMs = append(cyc.CPUMs, cpu)
		cyc.Total += it
		m.Block(t)
	}
	b.cycles = append(b.cycles, cyc)
	b.cycle++
	m.At(m.Now()+b.sleep+b.costs.BurstGap, b, 0)
}

// write writes burst-NAME.jsonl, one cycle per line, as the burst process
// prints (closed with the run writer's files).
func (b *burstWorker) write(rw *record.RunWriter) error {
	f, err := rw.Create(record.BurstFile(b.name))
	if err != nil || f == nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, c := range b.cycles {
		if err := enc.Encode(c); err != nil {
			return err
		}
	}
	return nil
}
