package sim

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/internal/golden"
)

// worker is a thread owner that needs a fixed amount of CPU, then stops, and
// notes when it finished.
type worker struct {
	name     string
	finished time.Duration
	// chunks is how many chunks make the worker finished (default 1).
	chunks, done int
}

func (w *worker) ChunkDone(m *Machine, t *Thread) {
	w.done++
	if w.done >= max(w.chunks, 1) {
		w.finished = m.Now()
	}
	m.tracef("done %s (cpu %.3f ms)", w.name, t.CPU/1e6)
	m.Block(t)
}

// scenario runs setup on a traced machine until the last worker finishes or
// limit, and compares the trace with testdata/NAME.trace.
func scenario(t *testing.T, name string, cores int, limit time.Duration, setup func(m *Machine) []*worker) (*Machine, []*worker) {
	t.Helper()
	var trace bytes.Buffer
	m := NewMachine(DefaultParams(cores))
	m.Trace = &trace
	ws := setup(m)
	m.RunUntil(limit, func() bool {
		for _, w := range ws {
			if w.finished == 0 {
				return false
			}
		}
		return true
	})
	m.AdvanceAll()
	golden.Compare(t, filepath.Join("testdata", name+".trace"), trace.Bytes())
	return m, ws
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// One thread needing 100 ms of CPU in a group limited to 0.3 CPU: it runs 30
// ms per 100 ms period (six 5 ms slices), is throttled for the other 70, and
// finishes 10 ms into the fourth period: at 310 ms.
func TestScenarioOneThreadAt03CPU(t *testing.T) {
	m, ws := scenario(t, "one-thread-0.3cpu", 2, 2*time.Second, func(m *Machine) []*worker {
		g := m.NewGroup("g", 1024, ms(30), ms(100), 0, nil, 0)
		w := &worker{name: "t0"}
		m.Wake(m.NewThread(g, w), ms(100))
		return []*worker{w}
	})
	g := m.groups[0]
	st := g.CPUStat(m)
	if ws[0].finished != ms(310) || st.ThrottledPeriods != 3 || st.ThrottledUsec != 210000 {
		t.Errorf("finished at %s, %d throttled periods, throttled %d us; want 310ms, 3, 210000", ws[0].finished, st.ThrottledPeriods, st.ThrottledUsec)
	}
}

// Four threads of 100 ms CPU each start together on four cores, in a group
// with a 2-CPU quota (200 ms per 100 ms): the four cores drain the pool in
// 50 ms, all four are throttled until the refill, and finish at 150 ms.
func TestScenarioFourThreadsInto2CPUQuota(t *testing.T) {
	m, ws := scenario(t, "four-threads-2cpu", 4, 2*time.Second, func(m *Machine) []*worker {
		g := m.NewGroup("g", 1024, ms(200), ms(100), 0, nil, 0)
		var ws []*worker
		for i := 0; i < 4; i++ {
			w := &worker{name: fmt.Sprintf("t%d", i)}
			m.Wake(m.NewThread(g, w), ms(100))
			ws = append(ws, w)
		}
		return ws
	})
	st := m.groups[0].CPUStat(m)
	for _, w := range ws {
		if w.finished != ms(150) {
			t.Errorf("%s finished at %s, want 150ms", w.name, w.finished)
		}
	}
	if st.ThrottledPeriods != 1 || st.ThrottledUsec != 200000 {
		t.Errorf("%d throttled periods, %d us throttled (summed over cores); want 1 and 200000", st.ThrottledPeriods, st.ThrottledUsec)
	}
}

// A BestEffort hog (weight 2) is alone on cpu1 when two server threads
// (weight 1024) wake: the first takes idle cpu0, the second finds no idle
// core and queues on cpu0 too. Weights only count within a core: the hog keeps
// all of cpu1 while the server threads share cpu0, until the busy-core
// balancer (every 16 x 4 ms) moves a server thread over, where it then gets
// 1024/1026 of cpu1.
func TestScenarioWeightOneNeighbour(t *testing.T) {
	m, ws := scenario(t, "weight-1-neighbour", 2, time.Second, func(m *Machine) []*worker {
		be := m.NewGroup("besteffort", 2, 0, 0, 0, nil, 0)
		hog := m.NewThread(be, &worker{name: "hog"})
		hog.core = 1
		m.Wake(hog, time.Hour)
		srv := m.NewGroup("server", 1024, 0, 0, 0, nil, 0)
		a, b := &worker{name: "a"}, &worker{name: "b"}
		m.Wake(m.NewThread(srv, a), ms(50))
		m.Wake(m.NewThread(srv, b), ms(50))
		return []*worker{a, b}
	})
	// At 64 ms each server thread has had 32 ms; the moved one needs 18 ms more
	// at 1024/1026 of cpu1, the other 18 ms alone on cpu0.
	hog := m.groups[0]
	if ws[0].finished != ms(82) || ws[1].finished < ms(82) || ws[1].finished > ms(82.1) {
		t.Errorf("server threads finished at %s and %s; want 82 ms each (the moved one a little later)", ws[0].finished, ws[1].finished)
	}
	if hog.UsageNs < 64e6 {
		t.Errorf("the weight-2 hog had %.1f ms of CPU by the end; want at least the 64 ms it had alone", hog.UsageNs/1e6)
	}
}

// A group limited to 20 ms per 100 ms with a 20 ms burst, idle for three
// periods, then busy: the carried-over runtime gives its first busy period 40
// ms (quota + burst), counted as one burst of 20 ms, then 20 ms per period.
func TestScenarioBurstAccumulation(t *testing.T) {
	m, ws := scenario(t, "burst-accumulation", 1, 2*time.Second, func(m *Machine) []*worker {
		g := m.NewGroup("g", 1024, ms(20), ms(100), ms(20), nil, 0)
		w := &worker{name: "t0", chunks: 2}
		th := m.NewThread(g, w)
		// A 1 ms sip at the start starts the period timer; the big demand comes
		// at 300 ms.
		m.Wake(th, ms(1))
		m.At(ms(300), fn(func(m *Machine) { m.Wake(th, ms(80)) }), 0)
		return []*worker{w}
	})
	st := m.groups[0].CPUStat(m)
	// 80 ms: 41 in [300,400) (the 1 ms the core kept after the sip, plus the
	// pool of 40), 20 in [400,500), the last 19 by 519 ms.
	if ws[0].finished != ms(519) || st.Bursts != 1 || st.BurstUsec != 20000 {
		t.Errorf("finished at %s, %d bursts of %d us; want 519ms, 1, 20000", ws[0].finished, st.Bursts, st.BurstUsec)
	}
}

// With SMT, two siblings busy together each do SMTSpeed of the work: two 60
// ms chunks on CPUs 0 and 1 take 100 ms each (and 100 ms of CPU time each),
// while a 60 ms chunk alone on its core takes 60 ms.
func TestSMTSiblings(t *testing.T) {
	p := DefaultParams(4)
	p.SMT = true
	m := NewMachine(p)
	g := m.NewGroup("g", 1024, 0, 0, 0, nil, 0)
	var ws []*worker
	for i, c := range []int{0, 1, 2} {
		w := &worker{name: fmt.Sprint(i)}
		th := m.NewThread(g, w)
		th.core = c
		m.Wake(th, ms(60))
		ws = append(ws, w)
	}
	m.RunUntil(time.Second, func() bool { return ws[0].finished > 0 && ws[1].finished > 0 && ws[2].finished > 0 })
	// CPU 2's sibling (3) is idle; 0 and 1 are siblings.
	if ws[0].finished != ms(100) || ws[1].finished != ms(100) || ws[2].finished != ms(60) {
		t.Errorf("finished at %s %s %s; want 100ms 100ms 60ms", ws[0].finished, ws[1].finished, ws[2].finished)
	}
	if math.Abs(g.UsageNs-260e6) > 1e3 {
		t.Errorf("CPU time %.3f ms, want 260", g.UsageNs/1e6)
	}
}

// wakeAt wakes a thread with some work at a set time.
type wakeAt struct {
	t    *Thread
	work time.Duration
}

func (h wakeAt) handle(m *Machine, _ int64) { m.Wake(h.t, h.work) }

// One thread busy for a second holds the whole pool on its core (batched); a
// second thread wakes on the other core for 30 ms, which makes the first give
// back what it has not used. Under a quota of the machine's size (2 CPUs of 2)
// the group can never be throttled; under 0.5 CPU it never gets more than its
// quota a period. The first was throttled (1 period in 10) when the pool was
// reclaimed from a core whose runtime had not been accounted up to the moment:
// the core kept running on runtime it had already used, until its stale event.
func TestReclaimAccountsTheCoreFirst(t *testing.T) {
	for _, tc := range []struct {
		quota      time.Duration
		throttled  bool
		maxUsageMs float64
	}{
		{quota: ms(200), throttled: false, maxUsageMs: 1030},
		{quota: ms(50), throttled: true, maxUsageMs: 500},
	} {
		m := NewMachine(DefaultParams(2))
		g := m.NewGroup("g", 1024, tc.quota, ms(100), 0, nil, 0)
		busy := &worker{name: "busy"}
		m.Wake(m.NewThread(g, busy), ms(1000))
		brief := &worker{name: "brief"}
		m.At(ms(150), wakeAt{m.NewThread(g, brief), ms(30)}, 0)
		m.RunUntil(time.Second, func() bool { return false })
		m.AdvanceAll()
		st := g.CPUStat(m)
		if (st.ThrottledPeriods > 0) != tc.throttled {
			t.Errorf("quota %v: %d of %d periods throttled, want throttled %v", tc.quota, st.ThrottledPeriods, st.Periods, tc.throttled)
		}
		if used := g.UsageNs / 1e6; used > tc.maxUsageMs+0.001 {
			t.Errorf("quota %v: the group used %.3f ms of CPU in 1 s, more than its quota allows (%.0f ms)", tc.quota, used, tc.maxUsageMs)
		}
	}
}
