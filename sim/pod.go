package sim

import "time"

// A parent group is a pod's cgroup: a quota over the summed use of its
// children, each of which may have a quota of its own. The kernel nests the
// bandwidth control: a thread of a child runs on a core only while both its
// group and the parent have runtime there. The parent has a run queue per
// core (its local runtime, taken from its own pool by slices, and its own
// throttled state) that counts its children's runnable threads on that core;
// when it runs out of runtime on a core, every child thread there is parked
// on the parent's run queue until its period timer (or returned slack) brings
// runtime back. Weights stay flat: a child thread weighs its own group's
// shares on its core, as if the parent's weight were its children's sum.

// NewChildGroup adds a group inside parent (made by NewGroup, holding no
// thread of its own): its threads draw runtime from both quotas.
func (m *Machine) NewChildGroup(parent *Group, name string, shares uint64, quota, period, burst time.Duration, phase time.Duration) *Group {
	g := m.NewGroup(name, shares, quota, period, burst, nil, phase)
	m.nest(parent, g)
	return g
}

// nest puts g, a new group without threads or cpuset, inside parent.
func (m *Machine) nest(parent, g *Group) {
	g.parent = parent
	parent.children++
	m.nested = true
}

// count adds n runnable threads to the group's run queue on core c.
func (g *Group) count(c, n int) {
	r := &g.rq[c]
	was := r.n
	r.n += n
	g.runnable += n
	switch {
	case was == 0 && r.n > 0:
		g.activeRqs++
	case was > 0 && r.n == 0:
		g.activeRqs--
	}
}

// parentRuntime takes runtime for the parent of a thread's group on core c
// when it has none left there, and throttles the parent there if its pool is
// empty. It reports whether the parent was throttled.
func (m *Machine) parentRuntime(g *Group, c int) bool {
	p := g.parent
	if p == nil || !p.limited() {
		return false
	}
	if r := &p.rq[c]; r.local <= eps && !r.throttled && !p.assign(m, c) {
		p.throttle(m, c)
		return true
	}
	return false
}

// resume puts a parked thread back on its core's run queue (its groups are
// not throttled there).
func (m *Machine) resume(t *Thread, co *core) {
	t.state = running
	t.Parked += float64(m.now - t.parkedAt)
	co.run = append(co.run, t)
	m.ran(1)
	if len(co.run) > 1 {
		m.scheduleTick()
	}
	t.g.count(co.id, 1)
	if p := t.g.parent; p != nil {
		p.count(co.id, 1)
	}
}

// dropThrottled removes core c from the cores where the group is throttled.
func (g *Group) dropThrottled(c int) {
	for i, x := range g.throttledRqs {
		if x == c {
			g.throttledRqs = append(g.throttledRqs[:i], g.throttledRqs[i+1:]...)
			return
		}
	}
}

// parentNext is how long until a limited parent of the threads on core c
// runs out of local runtime there, at their current rates (+Inf if none).
func (m *Machine) parentNext(c *core, next float64) float64 {
	for _, t := range c.run {
		if p := t.g.parent; p != nil && p.limited() {
			p.rate = 0
		}
	}
	for _, t := range c.run {
		if p := t.g.parent; p != nil && p.limited() {
			p.rate += t.rate
		}
	}
	for _, t := range c.run {
		if p := t.g.parent; p != nil && p.limited() && p.rate > 0 {
			next = min(next, max(p.rq[c.id].local, 0)/p.rate)
		}
	}
	return next
}
