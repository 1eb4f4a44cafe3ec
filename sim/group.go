package sim

import (
	"time"

	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/cgroup"
)

// Group is a cgroup: a weight, an optional CFS bandwidth limit and an allowed
// set of cores.
type Group struct {
	Name string
	// Shares is the weight (cpu.shares, 2..262144).
	Shares uint64
	// Root marks the threads of processes outside the experiment's groups
	// (the load generator): each weighs 1024 beside the experiment.
	Root bool
	// Bandwidth is the group's quota, period, burst and pool (the kernel's
	// cfs_bandwidth, the one quota model); its Stat counts what cpu.stat
	// counts but throttled time.
	cfs.Bandwidth
	cpus     []bool // nil: every core
	threads  []*Thread
	runnable int

	rq           []rq // per core
	phase        time.Duration
	throttledRqs []int // cores where the group is throttled, in order
	// activeRqs counts cores with runnable threads of the group; batched
	// cores holding more than a slice (see assign).
	activeRqs, batched int

	// UsageNs is the CPU the group has used.
	UsageNs float64
	// throttledNs accumulates throttled time (summed over cores, like the
	// kernel's throttled_time) exactly; Stat.ThrottledUsec is set from it.
	throttledNs float64
	// parent is the group this one is nested in (a pod's), or nil; children
	// counts the groups nested in this one; rate is scratch for parentNext.
	parent   *Group
	children int
	rate     float64
}

// rq is a group's run queue on one core (the kernel's per-CPU cfs_rq).
type rq struct {
	local     float64 // runtime_remaining, ns
	batched   bool    // holds the whole pool, not one slice (see assign)
	n         int     // runnable threads of the group here
	throttled bool
	since     time.Duration
	parked    []*Thread
}

// NewGroup adds a group. Periods of different groups start at different
// phases: phase is when this one's period timer ticks, modulo the period.
func (m *Machine) NewGroup(name string, shares uint64, quota, period, burst time.Duration, cpus []int, phase time.Duration) *Group {
	g := &Group{Name: name, Shares: max(shares, 2), Bandwidth: cfs.NewBandwidth(quota, period, burst), rq: make([]rq, len(m.cores)), phase: phase}
	if len(cpus) > 0 {
		g.cpus = make([]bool, len(m.cores))
		for _, c := range cpus {
			if c >= 0 && c < len(m.cores) {
				g.cpus[c] = true
			}
		}
	}
	m.groups = append(m.groups, g)
	return g
}

func (g *Group) limited() bool { return g.Limited() }

func (g *Group) allowed(c int) bool { return g.cpus == nil || g.cpus[c] }

func (g *Group) firstAllowed() int {
	for c := range g.rq {
		if g.allowed(c) {
			return c
		}
	}
	return 0
}

// CPUStat returns the group's cpu.stat counters so far.
func (g *Group) CPUStat(m *Machine) cgroup.CPUStat {
	s := cgroup.CPUStat{Periods: g.Stat.Periods, ThrottledPeriods: g.Stat.ThrottledPeriods, Bursts: g.Stat.Bursts, BurstUsec: g.Stat.BurstUsec}
	t := g.throttledNs
	for c := range g.rq {
		if g.rq[c].throttled {
			t += float64(m.now - g.rq[c].since)
		}
	}
	s.ThrottledUsec = uint64(t / 1e3)
	return s
}

// assign tops a core's local runtime up to a slice from the pool
// (assign_cfs_rq_runtime). It reports whether the core has runtime now.
//
// When the group runs on this core only, the core takes the whole pool at
// once instead of a slice every 5 ms: the kernel would hand it the same
// slices one after another, and nothing else can ask for them until another
// core of the group needs runtime or the period ends, when reclaim gives the
// pool back what the kernel would still have in it. This saves most slice
// events (a single-threaded instance under a 1-CPU limit takes 20 a period).
func (g *Group) assign(m *Machine, c int) bool {
	r := &g.rq[c]
	g.start(m)
	if g.batched > 0 {
		g.reclaim(m, c)
	}
	if g.Pool > 0 {
		amt := min(g.Pool, float64(m.p.Slice)-r.local)
		if g.activeRqs <= 1 && len(g.throttledRqs) == 0 && g.Pool > amt {
			amt = g.Pool
			r.batched = true
			g.batched++
		}
		if amt > 0 {
			g.Take(amt)
			r.local += amt
		}
	}
	return r.local > eps
}

// reclaim returns to the pool what batched cores (other than keep, -1 for
// all) hold beyond the slice the kernel would have given them last.
func (g *Group) reclaim(m *Machine, keep int) {
	slice := float64(m.p.Slice)
	for c := range g.rq {
		r := &g.rq[c]
		if !r.batched || c == keep {
			continue
		}
		// Its local runtime is only current once the core is accounted up to
		// now; touch also reschedules it, as its runtime runs out sooner.
		m.touch(m.cores[c])
		r.batched = false
		g.batched--
		if r.local > slice {
			rem := r.local - slice*float64(int64(r.local/slice))
			if rem <= eps {
				rem = slice
			}
			g.Pool += r.local - rem
			r.local = rem
		}
	}
}

// start runs the period timer if it was stopped (start_cfs_bandwidth): it
// keeps its phase, so the next refill is at the next tick of the group's grid.
func (g *Group) start(m *Machine) {
	if g.Start() {
		m.q.push(g.NextTick(m.now, g.phase), periodTimer{g}, 0)
	}
}

// throttle stops the group's threads on core c until runtime comes back:
// a leaf group's own threads, or for a parent (a pod) every thread of its
// children there.
func (g *Group) throttle(m *Machine, c int) {
	r := &g.rq[c]
	if r.throttled {
		return
	}
	co := m.cores[c]
	m.touch(co)
	r.throttled, r.since = true, m.now
	if m.Trace != nil {
		m.tracef("throttle %s on cpu%d (pool %.3f ms)", g.Name, c, g.Pool/1e6)
	}
	g.throttledRqs = append(g.throttledRqs, c)
	kept := co.run[:0]
	for _, t := range co.run {
		if g.parks(t) {
			t.state, t.parkedAt = parked, m.now
			r.parked = append(r.parked, t)
			// The thread leaves its group's count on the core and its
			// parent's, whichever of them throttles.
			t.g.count(c, -1)
			if pp := t.g.parent; pp != nil {
				pp.count(c, -1)
			}
			continue
		}
		kept = append(kept, t)
	}
	for i := len(kept); i < len(co.run); i++ {
		co.run[i] = nil
	}
	m.ran(len(kept) - len(co.run))
	co.run = kept
	if len(co.run) == 0 {
		m.pullTo(c)
	}
}

// parks reports whether g's throttling parks thread t: t is g's own, or
// g is a parent and t its child's.
func (g *Group) parks(t *Thread) bool {
	if g.children > 0 {
		return t.g.parent == g
	}
	return t.g == g
}

// unthrottle puts the threads g parked on core c back to work, but for
// those the other level still holds there (a leaf's parent, a parent's
// child, throttled on c): they wait on it.
func (g *Group) unthrottle(m *Machine, c int) {
	r := &g.rq[c]
	co := m.cores[c]
	m.touch(co)
	r.throttled = false
	g.throttledNs += float64(m.now - r.since)
	if m.Trace != nil {
		m.tracef("unthrottle %s on cpu%d (local %.3f ms, throttled %.3f ms)", g.Name, c, r.local/1e6, float64(m.now-r.since)/1e6)
	}
	g.dropThrottled(c)
	for _, t := range r.parked {
		other := g.parent
		if g.children > 0 {
			other = t.g
		}
		if other != nil {
			if or := &other.rq[c]; or.throttled {
				or.parked = append(or.parked, t)
				continue
			}
		}
		m.resume(t, co)
	}
	r.parked = r.parked[:0]
}

// returnSlack gives what a core holds beyond MinRuntime back to the pool when
// the group has nothing left to run there (return_cfs_rq_runtime), and lets
// a throttled core use it.
func (g *Group) returnSlack(m *Machine, c int) {
	r := &g.rq[c]
	if !g.limited() || r.throttled {
		return
	}
	if r.batched {
		r.batched = false
		g.batched--
	}
	if slack := r.local - float64(m.p.MinRuntime); slack > 0 {
		g.Pool += slack
		r.local -= slack
	}
	// The kernel hands returned runtime to throttled cores from its slack timer
	// (5 ms later), and only when more than a slice is free.
	if g.Pool > float64(m.p.Slice) && len(g.throttledRqs) > 0 {
		g.distribute(m)
	}
}

// distribute gives the pool to throttled cores, in the order they were
// throttled, and unthrottles each that gets some.
func (g *Group) distribute(m *Machine) {
	for len(g.throttledRqs) > 0 && g.Pool > 0 {
		c := g.throttledRqs[0]
		r := &g.rq[c]
		amt := min(g.Pool, float64(m.p.Slice)-r.local)
		if amt <= 0 && r.local <= eps {
			break
		}
		g.Pool -= max(amt, 0)
		r.local += max(amt, 0)
		g.unthrottle(m, c)
	}
}

type periodTimer struct{ g *Group }

// handle is the period timer (do_sched_cfs_period_timer): the pool refills
// (Bandwidth.Refill), then throttled cores get runtime; it stops after a
// period in which the group used nothing.
func (p periodTimer) handle(m *Machine, _ int64) {
	g := p.g
	throttled := len(g.throttledRqs) > 0
	if g.batched > 0 {
		// The kernel's pool still holds what a batched core has beyond its
		// slice; and that core took runtime this period.
		g.reclaim(m, -1)
		g.Used()
	}
	running := g.Refill(throttled)
	if m.Trace != nil {
		m.tracef("refill %s: pool %.3f ms, periods %d, throttled %d, bursts %d", g.Name, g.Pool/1e6, g.Stat.Periods, g.Stat.ThrottledPeriods, g.Stat.Bursts)
	}
	if !running {
		return
	}
	m.q.push(m.now+g.Period, p, 0)
	if throttled {
		g.distribute(m)
	}
}
