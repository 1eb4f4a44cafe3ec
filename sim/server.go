package sim

import "time"

// GoPreempt is how long the Go runtime lets a goroutine run before it
// preempts it for a waiting one (sysmon's forcePreemptNS).
const GoPreempt = 10 * time.Millisecond

// Request is one request inside a simulated server.
type Request struct {
	// Work is the CPU the request needs; Left what it still needs.
	Work, Left time.Duration
	// Arrived is when the server got it, Started when a thread first ran it
	// (for the queue time of the single-threaded server).
	Arrived, Started time.Duration
	started          bool
	// Done is told when the request's last CPU is done.
	Done Doner
	// ran is the CPU the request had since it was scheduled, before its
	// current chunk; chunk is the CPU that chunk was given.
	ran, chunk float64
	// Throttled is how long the request's thread was throttled while it ran
	// the request; parked0 the thread's count when it took the request.
	Throttled time.Duration
	parked0   float64
}

// Doner is told when a request is done.
type Doner interface {
	RequestDone(m *Machine, r *Request)
}

// Server is a workload server instance: GOMAXPROCS threads running one
// goroutine per request (Go's scheduler: a FIFO of runnable goroutines, each
// preempted after GoPreempt when others wait), or a single thread serving
// requests one at a time in arrival order.
type Server struct {
	Name    string
	Group   *Group
	single  bool
	threads []*Thread
	idle    []*Thread
	cur     []*Request // by thread Tag
	queue   []*Request
	head    int
	// idleSince is when the last busy thread went idle; lastArrival when the
	// last request came.
	idleSince, lastArrival time.Duration
	// runtime is the Go runtime's own thread (sysmon, timers, GC workers): it
	// spends the background CPU of idle spells, beside the requests.
	runtime *Thread
}

// Background charges the server background CPU: the runtime thread runs it
// beside the request threads, within the same group (and quota).
func (s *Server) Background(m *Machine, work time.Duration) {
	if work <= 0 {
		return
	}
	if s.runtime == nil {
		s.runtime = m.NewThread(s.Group, runtimeOwner{})
	}
	if s.runtime.Running() {
		m.SetWork(s.runtime, time.Duration(s.runtime.Work())+work)
		return
	}
	m.Wake(s.runtime, work)
}

type runtimeOwner struct{}

func (runtimeOwner) ChunkDone(m *Machine, t *Thread) { m.Block(t) }

// IdleFor is how long every thread of the server has been idle (0 if one is
// busy).
func (s *Server) IdleFor(now time.Duration) time.Duration {
	if len(s.idle) < len(s.threads) {
		return 0
	}
	return now - s.idleSince
}

// NewServer makes a server with procs threads in g.
func (m *Machine) NewServer(name string, g *Group, procs int, single bool) *Server {
	if single {
		procs = 1
	}
	s := &Server{Name: name, Group: g, single: single}
	for i := 0; i < max(procs, 1); i++ {
		t := m.NewThread(g, s)
		t.Tag = i
		s.threads = append(s.threads, t)
		s.cur = append(s.cur, nil)
	}
	// Idle threads are taken from the end: thread 0 first.
	for i := len(s.threads) - 1; i >= 0; i-- {
		s.idle = append(s.idle, s.threads[i])
	}
	return s
}

// Waiting is the number of requests queued for a thread.
func (s *Server) Waiting() int { return len(s.queue) - s.head }

// Arrive hands the server a request.
func (s *Server) Arrive(m *Machine, r *Request) {
	r.Arrived, r.Left = m.Now(), r.Work
	s.lastArrival = m.Now()
	if n := len(s.idle); n > 0 {
		t := s.idle[n-1]
		s.idle = s.idle[:n-1]
		s.start(m, t, r, true)
		return
	}
	s.queue = append(s.queue, r)
	if s.single || s.Waiting() != 1 {
		return
	}
	// Someone waits now: running goroutines stop at their next preemption
	// point (GoPreempt of CPU since they were scheduled).
	for _, t := range s.threads {
		if c := s.cur[t.Tag]; c != nil && t.Running() {
			m.touch(m.cores[t.core])
			c.chunk -= m.CutWork(t, max(float64(GoPreempt)-ranSince(t, c), 0))
		}
	}
}

// ranSince is the CPU request r has had on thread t since it was scheduled.
func ranSince(t *Thread, r *Request) float64 {
	return r.ran + (r.chunk - t.work)
}

func (s *Server) start(m *Machine, t *Thread, r *Request, wake bool) {
	if !r.started {
		r.started, r.Started = true, m.Now()
	}
	s.cur[t.Tag] = r
	r.ran, r.parked0 = 0, t.Parked
	chunk := r.Left
	if !s.single && s.Waiting() > 0 {
		chunk = min(chunk, GoPreempt)
	}
	r.chunk = float64(chunk)
	if wake {
		m.Wake(t, chunk)
	} else {
		m.SetWork(t, chunk)
	}
}

// ChunkDone implements Owner.
func (s *Server) ChunkDone(m *Machine, t *Thread) {
	r := s.cur[t.Tag]
	did := r.chunk - t.work
	r.Throttled += time.Duration(t.Parked - r.parked0)
	r.parked0 = t.Parked
	r.Left -= time.Duration(did + 0.5)
	if r.Left < time.Nanosecond {
		r.Left = 0
	}
	if r.Left == 0 {
		s.cur[t.Tag] = nil
		r.Done.RequestDone(m, r)
		s.next(m, t)
		return
	}
	if s.Waiting() == 0 {
		// Preempted with nobody waiting: Go schedules it again at once.
		r.ran, r.chunk = 0, float64(r.Left)
		m.SetWork(t, r.Left)
		return
	}
	// Preempted: to the back of the run queue, and the next goroutine runs.
	s.cur[t.Tag] = nil
	s.queue = append(s.queue, r)
	s.next(m, t)
}

// next gives thread t the next waiting request, or parks it.
func (s *Server) next(m *Machine, t *Thread) {
	if s.Waiting() > 0 {
		r := s.queue[s.head]
		s.queue[s.head] = nil
		s.head++
		if s.head > 1024 && s.head*2 > len(s.queue) {
			s.queue = append(s.queue[:0], s.queue[s.head:]...)
			s.head = 0
		}
		s.start(m, t, r, false)
		return
	}
	m.Block(t)
	s.idle = append(s.idle, t)
	if len(s.idle) == len(s.threads) {
		s.idleSince = m.Now()
	}
}
