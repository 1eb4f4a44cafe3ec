package sim

import (
	"fmt"
	"testing"
	"time"
)

// doneAt notes when each request is done.
type doneAt struct{ at []time.Duration }

func (d *doneAt) RequestDone(m *Machine, _ *Request) { d.at = append(d.at, m.Now()) }

// TestGOMAXPROCSIsTheServersThreads: the simulator models a Go server's
// GOMAXPROCS as the threads that run its requests at once (f15-gomaxprocs's
// twin rests on it). Four 5 ms requests arrive together at a server in a
// group limited to 1 CPU on 2 cores: with GOMAXPROCS=1 they run one after
// another (the last done at 20 ms, as F4's single thread); with 2 two at a
// time (10 ms); with 8 no sooner than with 2, since 2 cores run at most 2
// threads at once; and with 2 threads the 1-CPU quota (100 ms per 100 ms
// period) is never reached.
func TestGOMAXPROCSIsTheServersThreads(t *testing.T) {
	last := map[int]time.Duration{}
	for _, procs := range []int{1, 2, 8} {
		m := NewMachine(DefaultParams(2))
		g := m.NewGroup(fmt.Sprintf("gomaxprocs-%d", procs), 1024, ms(100), ms(100), 0, nil, 0)
		s := m.NewServer("s", g, procs, false)
		d := &doneAt{}
		for i := 0; i < 4; i++ {
			s.Arrive(m, &Request{Work: ms(5), Done: d})
		}
		m.RunUntil(time.Second, func() bool { return len(d.at) == 4 })
		m.AdvanceAll()
		if len(d.at) != 4 {
			t.Fatalf("GOMAXPROCS=%d: %d of 4 requests done in 1 s", procs, len(d.at))
		}
		last[procs] = d.at[3]
		if st := g.CPUStat(m); st.ThrottledPeriods != 0 {
			t.Errorf("GOMAXPROCS=%d: %d throttled periods; 20 ms of work cannot spend a 100 ms quota", procs, st.ThrottledPeriods)
		}
	}
	t.Logf("last of 4 requests done at: GOMAXPROCS=1 %s, 2 %s, 8 %s", last[1], last[2], last[8])
	if last[1] != ms(20) || last[2] != ms(10) {
		t.Errorf("last request done at %s with GOMAXPROCS=1 and %s with 2; want 20ms (one at a time) and 10ms (two at a time)", last[1], last[2])
	}
	if last[8] < last[2] || last[8] > last[2]+ms(1) {
		t.Errorf("last request done at %s with GOMAXPROCS=8; want that of 2 (%s): 2 cores run at most 2 threads at once", last[8], last[2])
	}
}
