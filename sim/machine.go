package sim

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
)

// Params describe the simulated machine and the scheduler's tunables.
type Params struct {
	// Cores is the number of CPUs.
	Cores int
	// Slice is how much runtime a core takes from its group's pool at a time
	// (sched_cfs_bandwidth_slice_us, cfs.Slice by default).
	Slice time.Duration
	// MinRuntime is what a core keeps when its group goes idle there; the rest
	// goes back to the pool (min_cfs_rq_runtime, 1 ms).
	MinRuntime time.Duration
	// BalanceInterval is the load balancer's tick; busy cores balance every
	// BusyFactor ticks only (the kernel's busy_factor), idle ones every tick.
	BalanceInterval time.Duration
	BusyFactor      int
	// SMT pairs the CPUs as hyperthreads of one core (0 and 1, 2 and 3, ...):
	// while both of a pair run, each does SMTSpeed of the work it would do
	// alone in the same CPU time (time is still accounted in full).
	SMT      bool
	SMTSpeed float64
	// RootGroup puts the threads of root groups (the load generator) in one
	// group beside the experiment's subtree: together they weigh their
	// group's Shares against the experiment's groups together (1024), as
	// the local backend places the load generator. Without it each weighs
	// 1024, as a process in the root group.
	RootGroup bool `json:",omitempty"`
}

// DefaultParams are the kernel's defaults.
func DefaultParams(cores int) Params {
	return Params{Cores: cores, Slice: cfs.Slice, MinRuntime: time.Millisecond, BalanceInterval: 4 * time.Millisecond, BusyFactor: 16, SMTSpeed: 0.6}
}

// eps is the work (in ns) below which a chunk counts as done: event times are
// rounded up to whole nanoseconds, so a chunk ends at or just past zero.
const eps = 1e-6

// Machine is the discrete-event model of a multi-core machine: per-core run
// queues where groups share a core by weight (weights are local to each core,
// as in Linux), wake-up placement, a periodic load balancer, and CFS bandwidth
// control per group. It is single-threaded and deterministic.
type Machine struct {
	p      Params
	now    time.Duration
	q      queue
	cq     coreQueue
	cores  []*core
	groups []*Group
	dirty  []*core
	// tickPending is set while a balancer tick is scheduled: ticks run only
	// while some core has a thread waiting, on the grid of BalanceInterval.
	tickPending bool
	// Events counts the events handled, for the benchmark.
	Events uint64
	// Trace, if set, receives a line per scheduler decision (throttle,
	// unthrottle, refill, migration), for the scenario tests.
	Trace io.Writer
	done  []*Thread // scratch
	// running is the number of threads on the cores' run queues; idleSince
	// when it last fell to zero.
	running   int
	idleSince time.Duration
	// nested is set once a group has a parent (NewChildGroup).
	nested bool
}

type core struct {
	id    int
	run   []*Thread // runnable threads on this core (not throttled)
	last  time.Duration
	dirty bool
	// speed is the work done per CPU time (below 1 while an SMT sibling
	// runs); busy whether the core ran anything at its last reschedule.
	speed float64
	busy  bool
	// The core's pending event: when, its place among ties, and its index in
	// the core queue (-1: none).
	at  time.Duration
	seq uint64
	pos int
}

// NewMachine returns an idle machine at time 0.
func NewMachine(p Params) *Machine {
	if p.Slice == 0 {
		p = DefaultParams(p.Cores)
	}
	m := &Machine{p: p}
	for i := 0; i < p.Cores; i++ {
		m.cores = append(m.cores, &core{id: i, pos: -1, speed: 1})
	}
	return m
}

// Now is the simulated time.
func (m *Machine) Now() time.Duration { return m.now }

// Cores is the number of CPUs.
func (m *Machine) Cores() int { return len(m.cores) }

// ran counts n threads onto (or, negative, off) the cores' run queues.
func (m *Machine) ran(n int) {
	m.running += n
	if m.running == 0 && n < 0 {
		m.idleSince = m.now
	}
}

// IdleFor is how long every core has been idle (0 while one runs a thread).
func (m *Machine) IdleFor() time.Duration {
	if m.running > 0 {
		return 0
	}
	return m.now - m.idleSince
}

// At schedules h at time at (not before now).
func (m *Machine) At(at time.Duration, h handler, arg int64) {
	m.q.push(max(at, m.now), h, arg)
}

// RunUntil handles events until stop returns true (checked after each event)
// or the clock passes limit.
func (m *Machine) RunUntil(limit time.Duration, stop func() bool) {
	m.flush() // changes made from outside, before the first event
	for !stop() {
		// The next event: the main queue's or a core's, by (time, seq).
		var c *core
		if len(m.cq.heap) > 0 {
			c = m.cq.heap[0]
		}
		if c != nil && (m.q.len() == 0 || c.at < m.q.ev[0].at || c.at == m.q.ev[0].at && c.seq < m.q.ev[0].seq) {
			if c.at > limit {
				return
			}
			m.cq.remove(c)
			m.now = c.at
			m.Events++
			m.coreEvent(c)
			m.flush()
			continue
		}
		if m.q.len() == 0 {
			return
		}
		if m.q.ev[0].at > limit {
			return
		}
		e := m.q.pop()
		m.now = e.at
		m.Events++
		e.h.handle(m, e.arg)
		m.flush()
	}
}

// touch brings a core's accounting up to now before its runnable set changes,
// and marks it for rescheduling.
func (m *Machine) touch(c *core) {
	m.advance(c)
	if !c.dirty {
		c.dirty = true
		m.dirty = append(m.dirty, c)
	}
}

// advance accounts the CPU each runnable thread got since the core was last
// brought up to date. The rates have not changed since, so the core's pending
// event stays right.
func (m *Machine) advance(c *core) {
	dt := float64(m.now - c.last)
	c.last = m.now
	if dt <= 0 {
		return
	}
	for _, t := range c.run {
		d := t.rate * dt
		t.work -= d * c.speed
		t.CPU += d
		t.g.UsageNs += d
		if t.g.limited() {
			t.g.rq[c.id].local -= d
		}
		if p := t.g.parent; p != nil {
			p.UsageNs += d
			if p.limited() {
				p.rq[c.id].local -= d
			}
		}
	}
}

// AdvanceAll brings every core up to now (before reading usage).
func (m *Machine) AdvanceAll() {
	for _, c := range m.cores {
		m.advance(c)
	}
}

func (m *Machine) flush() {
	for len(m.dirty) > 0 {
		c := m.dirty[len(m.dirty)-1]
		m.dirty = m.dirty[:len(m.dirty)-1]
		c.dirty = false
		m.reschedule(c)
		if busy := len(c.run) > 0; m.p.SMT && busy != c.busy && c.id^1 < len(m.cores) {
			// The sibling's speed changes now: account its past at the old
			// speed, then reschedule it at the new.
			c.busy = busy
			m.touch(m.cores[c.id^1])
		}
	}
}

// reschedule sets the rates on a core and schedules its next event: the first
// chunk to finish or the first group to run out of local runtime. A group's
// threads share its weight; groups share the core by weight. Threads of root
// groups (the load generator, outside the experiment's cgroups) each weigh
// 1024 against the experiment's groups together, which weigh 1024 as one
// entity, as in the cgroup hierarchy; with Params.RootGroup they weigh their
// group's Shares together.
func (m *Machine) reschedule(c *core) {
	if len(c.run) == 0 {
		m.cq.remove(c)
		return
	}
	wsum, roots, rootShares := 0.0, 0, uint64(0)
	for _, t := range c.run {
		if t.g.Root {
			roots++
			rootShares = t.g.Shares
			continue
		}
		wsum += float64(t.g.Shares) / float64(t.g.rq[c.id].n)
	}
	c.speed = 1
	if m.p.SMT && c.id^1 < len(m.cores) && len(m.cores[c.id^1].run) > 0 {
		c.speed = m.p.SMTSpeed
	}
	expShare := 1.0
	if roots > 0 {
		switch {
		case wsum > 0 && m.p.RootGroup:
			expShare = 1024 / float64(1024+rootShares)
		case wsum > 0:
			expShare = 1 / float64(roots+1)
		default:
			expShare = 0
		}
	}
	next := math.Inf(1)
	for _, t := range c.run {
		rq := &t.g.rq[c.id]
		if t.g.Root {
			t.rate = (1 - expShare) / float64(roots)
		} else {
			t.rate = expShare * float64(t.g.Shares) / wsum / float64(rq.n)
		}
		next = math.Min(next, math.Max(t.work, 0)/(t.rate*c.speed))
		if t.g.limited() {
			// The group's threads here use the runtime at the group's share.
			next = math.Min(next, math.Max(rq.local, 0)/(t.rate*float64(rq.n)))
		}
	}
	if m.nested {
		next = m.parentNext(c, next)
	}
	m.q.seq++
	c.at, c.seq = m.now+time.Duration(math.Ceil(next)), m.q.seq
	m.cq.set(c)
}

// coreEvent handles a core's event: chunks that are done, and groups out of
// local runtime.
func (m *Machine) coreEvent(c *core) {
	m.touch(c)
	m.done = m.done[:0]
	for _, t := range c.run {
		if t.work <= eps {
			m.done = append(m.done, t)
		}
	}
	for _, t := range m.done {
		if t.state == running && t.core == c.id && t.work <= eps {
			t.owner.ChunkDone(m, t)
		}
	}
	// Groups that used up their local runtime take more, or are throttled.
	for i := 0; i < len(c.run); i++ {
		g := c.run[i].g
		if rq := &g.rq[c.id]; g.limited() && rq.local <= eps && !rq.throttled {
			if !g.assign(m, c.id) {
				g.throttle(m, c.id)
				i = -1 // the run queue changed: look again
				continue
			}
		}
		if g.parent != nil && m.parentRuntime(g, c.id) {
			i = -1
		}
	}
}

// threadState is where a thread is.
type threadState uint8

const (
	blocked threadState = iota
	running             // on a core's run queue
	parked              // on a core, but its group is throttled there
)

// Owner is told when a thread's chunk of work is done. It gives the thread more
// work (SetWork) or blocks it (Block).
type Owner interface {
	ChunkDone(m *Machine, t *Thread)
}

// Thread is a kernel thread in a group.
type Thread struct {
	g     *Group
	owner Owner
	state threadState
	core  int
	work  float64 // ns of CPU left in the current chunk
	rate  float64 // share of its core, while running
	// CPU is the CPU time the thread has had, in ns; Parked the time it was
	// runnable but throttled.
	CPU, Parked float64
	parkedAt    time.Duration
	// Tag is for the owner.
	Tag int
}

// NewThread makes a blocked thread in g.
func (m *Machine) NewThread(g *Group, o Owner) *Thread {
	t := &Thread{g: g, owner: o, core: -1}
	g.threads = append(g.threads, t)
	return t
}

// Work is the CPU left in the thread's current chunk (ns).
func (t *Thread) Work() float64 { return t.work }

// Running reports whether the thread is runnable or throttled (not blocked).
func (t *Thread) Running() bool { return t.state != blocked }

// SetWork gives a runnable thread its next chunk, from its ChunkDone.
func (m *Machine) SetWork(t *Thread, work time.Duration) {
	if t.state != blocked && t.core >= 0 {
		m.touch(m.cores[t.core])
	}
	t.work = float64(work)
}

// CutWork shortens the current chunk of a running thread to at most work
// (a preemption point), returning how much was cut.
func (m *Machine) CutWork(t *Thread, work float64) float64 {
	if t.state == blocked {
		return 0
	}
	m.touch(m.cores[t.core])
	if t.work <= work {
		return 0
	}
	cut := t.work - work
	t.work = work
	return cut
}

// Wake makes a blocked thread runnable with a chunk of work, on an idle core
// of its group's allowed set if there is one (its last core first), else on
// its last core.
func (m *Machine) Wake(t *Thread, work time.Duration) {
	if t.state != blocked {
		panic("sim: waking a thread that is not blocked")
	}
	t.work = float64(work)
	m.place(t, m.pickCore(t))
}

func (m *Machine) pickCore(t *Thread) int {
	g, n := t.g, len(m.cores)
	prev := t.core
	if prev < 0 || !g.allowed(prev) {
		prev = g.firstAllowed()
	}
	for i := 0; i < n; i++ {
		c := (prev + i) % n
		if g.allowed(c) && len(m.cores[c].run) == 0 {
			return c
		}
	}
	return prev
}

// place puts a thread on a core: runnable, or parked if its group is throttled
// there (or has no runtime left to give it).
func (m *Machine) place(t *Thread, c int) {
	co := m.cores[c]
	m.touch(co)
	t.core = c
	g := t.g
	rq := &g.rq[c]
	if rq.throttled {
		t.state, t.parkedAt = parked, m.now
		rq.parked = append(rq.parked, t)
		return
	}
	if p := g.parent; p != nil && p.rq[c].throttled {
		t.state, t.parkedAt = parked, m.now
		p.rq[c].parked = append(p.rq[c].parked, t)
		return
	}
	t.state = running
	co.run = append(co.run, t)
	m.ran(1)
	if len(co.run) > 1 {
		m.scheduleTick()
	}
	rq.n++
	if rq.n == 1 {
		g.activeRqs++
	}
	g.runnable++
	if g.parent != nil {
		g.parent.count(c, 1)
	}
	if g.limited() && rq.local <= eps && !g.assign(m, c) {
		g.throttle(m, c)
	}
	if g.parent != nil && t.state == running {
		m.parentRuntime(g, c)
	}
}

// Block takes a thread off its core (it waits for something).
func (m *Machine) Block(t *Thread) {
	switch t.state {
	case blocked:
		return
	case parked:
		rq := &t.g.rq[t.core]
		rq.parked = removeThread(rq.parked, t)
		if p := t.g.parent; p != nil {
			p.rq[t.core].parked = removeThread(p.rq[t.core].parked, t)
		}
		t.state = blocked
		t.Parked += float64(m.now - t.parkedAt)
		return
	}
	c := m.cores[t.core]
	m.unqueue(t)
	t.state = blocked
	if len(c.run) == 0 {
		m.pullTo(c.id)
	}
}

// unqueue removes a running thread from its core's run queue.
func (m *Machine) unqueue(t *Thread) {
	c := m.cores[t.core]
	m.touch(c)
	c.run = removeThread(c.run, t)
	m.ran(-1)
	g := t.g
	rq := &g.rq[c.id]
	rq.n--
	if rq.n == 0 {
		g.activeRqs--
	}
	g.runnable--
	if rq.n == 0 {
		g.returnSlack(m, c.id)
	}
	if p := g.parent; p != nil {
		if p.count(c.id, -1); p.rq[c.id].n == 0 {
			p.returnSlack(m, c.id)
		}
	}
}

func removeThread(s []*Thread, t *Thread) []*Thread {
	for i, x := range s {
		if x == t {
			copy(s[i:], s[i+1:])
			s[len(s)-1] = nil
			return s[:len(s)-1]
		}
	}
	return s
}

// pullTo moves one runnable thread from the busiest core (two or more
// runnable) to the idle core c: the kernel's idle balancing.
func (m *Machine) pullTo(c int) bool {
	var from *core
	var pick *Thread
	for _, o := range m.cores {
		if o.id == c || len(o.run) < 2 || from != nil && len(o.run) <= len(from.run) {
			continue
		}
		for i := len(o.run) - 1; i >= 0; i-- {
			if o.run[i].g.allowed(c) {
				from, pick = o, o.run[i]
				break
			}
		}
	}
	if pick == nil {
		return false
	}
	if m.Trace != nil {
		m.tracef("pull %s: cpu%d -> cpu%d", pick.g.Name, from.id, c)
	}
	m.unqueue(pick)
	m.place(pick, c)
	return true
}

type balanceTick struct{}

// scheduleTick schedules the balancer's next tick on its grid.
func (m *Machine) scheduleTick() {
	if m.tickPending || m.p.BalanceInterval <= 0 {
		return
	}
	m.tickPending = true
	m.q.push((m.now/m.p.BalanceInterval+1)*m.p.BalanceInterval, balanceTick{}, 0)
}

// handle is the periodic load balancer: idle cores pull work every tick; busy
// cores compare load every BusyFactor ticks and the least loaded takes a
// thread from the most loaded when that narrows the gap.
func (balanceTick) handle(m *Machine, _ int64) {
	m.tickPending = false
	queued, idle := false, false
	for _, c := range m.cores {
		queued = queued || len(c.run) > 1
		idle = idle || len(c.run) == 0
	}
	if !queued {
		return // nothing waits for a core: the next wait starts the ticks again
	}
	m.scheduleTick()
	for _, c := range m.cores {
		if idle && len(c.run) == 0 {
			m.pullTo(c.id)
		}
	}
	if tick := int64(m.now / m.p.BalanceInterval); m.p.BusyFactor <= 0 || tick%int64(m.p.BusyFactor) != 0 {
		return
	}
	load := func(c *core) float64 {
		l := 0.0
		for _, t := range c.run {
			l += t.load()
		}
		return l
	}
	var hi, lo *core
	var hl, ll float64
	for _, c := range m.cores {
		l := load(c)
		if hi == nil || l > hl {
			hi, hl = c, l
		}
		if lo == nil || l < ll {
			lo, ll = c, l
		}
	}
	if hi == lo || len(hi.run) < 2 || hl <= 1.25*ll {
		return
	}
	gap := hl - ll
	for i := len(hi.run) - 1; i >= 0; i-- {
		t := hi.run[i]
		if t.g.allowed(lo.id) && t.load() < gap {
			if m.Trace != nil {
				m.tracef("balance %s: cpu%d -> cpu%d", t.g.Name, hi.id, lo.id)
			}
			m.unqueue(t)
			m.place(t, lo.id)
			return
		}
	}
}

// load is a thread's weight for balancing: its group's weight spread over the
// group's runnable threads.
func (t *Thread) load() float64 {
	return float64(t.g.Shares) / float64(max(t.g.runnable, 1))
}

func (m *Machine) String() string {
	return fmt.Sprintf("machine{cores %d, now %s, events %d}", len(m.cores), m.now, m.Events)
}

// tracef writes a trace line stamped with the simulated time in ms. Callers
// test m.Trace first: boxing the arguments would allocate on the event loop.
func (m *Machine) tracef(format string, args ...any) {
	if m.Trace == nil {
		return
	}
	fmt.Fprintf(m.Trace, "%9.3f ", float64(m.now)/1e6)
	fmt.Fprintf(m.Trace, format, args...)
	fmt.Fprintln(m.Trace)
}
