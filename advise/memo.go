package advise

import (
	"sync"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
)

// memo keeps what Evaluate's calls over the same windows share: Advise's
// count pass and then its band evaluate the same windows at the same
// phases. It keeps each window's cut at each period grid of the first
// stage (the two phases by need, or every phase), and the exact counts
// taken there: cutting a day of samples at one grid, or counting a setting
// the one pass leaves to Replay, costs about what a replay does. A window
// and its slice bound (the same demand, other quotas) share a key: their
// jobs may run at once, so the cut is made once under the entry's lock.
type memo struct {
	mu sync.Mutex
	m  map[memoKey]*memoCut
	// along holds a kept cut of each sample times at each grid: the
	// windows over the same times (the level's, Scaled) take their
	// cuts along it, sharing its sample index (cfs.Periods.Along).
	along map[alongKey]*cfs.Periods
}

// alongKey is sample times (a demand's At) and a grid.
type alongKey struct {
	at             *time.Duration
	n              int
	period, offset time.Duration
}

// memoKey is a window (a Demand) and a grid. The slice bound's quotas
// (Options.stranded) are other settings on the same cut: a count depends
// on the cut and the setting alone.
type memoKey struct {
	d              *Demand
	period, offset time.Duration
}

// memoCut is a window's cut at one grid and the exact counts taken on it.
type memoCut struct {
	once   sync.Once // makes ps
	ps     *cfs.Periods
	maxW   float64 // the work of ps's busiest period
	counts map[cfs.Setting]cfs.Count
}

func newMemo() *memo {
	return &memo{m: map[memoKey]*memoCut{}, along: map[alongKey]*cfs.Periods{}}
}

// cutAlong cuts d at jb's grid along a kept cut of the same sample times
// if there is one, else anew, and keeps it for the next.
func (m *memo) cutAlong(d *Demand, jb job) *memoCut {
	k := alongKey{&d.At[0], len(d.At), jb.period, jb.offset()}
	m.mu.Lock()
	like := m.along[k]
	m.mu.Unlock()
	if like == nil {
		c := newCut(d, jb)
		m.mu.Lock()
		if m.along[k] == nil {
			m.along[k] = c.ps
		}
		m.mu.Unlock()
		return c
	}
	c := &memoCut{ps: like.Along(d)}
	for _, w := range c.ps.Work {
		c.maxW = max(c.maxW, w)
	}
	return c
}

// at is k's entry (empty the first time).
func (m *memo) at(k memoKey) *memoCut {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.m[k]
	if c == nil {
		c = &memoCut{}
		m.m[k] = c
	}
	return c
}

// count is the exact count c has for st.
func (m *memo) count(c *memoCut, st cfs.Setting) (cfs.Count, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := c.counts[st]
	return n, ok
}

// keepCount puts st's exact count in c.
func (m *memo) keepCount(c *memoCut, st cfs.Setting, n cfs.Count) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.counts == nil {
		c.counts = map[cfs.Setting]cfs.Count{}
	}
	c.counts[st] = n
}

// cut is job j's cut (and the counts taken on it): the memo's where the
// stage keeps its cuts, else the stage's own. The path before
// (Options.before) cuts anew at every use.
func (s *stage) cut(j int) *memoCut {
	jb := s.jobs[j]
	if s.o.before {
		return newCut(s.d, jb)
	}
	if s.cuts[j] == nil {
		if s.keep {
			s.cuts[j] = s.memo.at(memoKey{s.d, jb.period, jb.offset()})
		} else {
			s.cuts[j] = &memoCut{}
		}
	}
	c := s.cuts[j]
	c.once.Do(func() {
		var nc *memoCut
		if s.keep {
			nc = s.memo.cutAlong(s.d, jb) // kept: never recycled
		} else {
			nc = newCut(s.d, jb)
		}
		c.ps, c.maxW = nc.ps, nc.maxW
	})
	return c
}

// newCut cuts d at jb's grid.
func newCut(d *Demand, jb job) *memoCut {
	c := &memoCut{ps: cfs.Cut(d, jb.period, jb.offset())}
	for _, w := range c.ps.Work {
		c.maxW = max(c.maxW, w)
	}
	return c
}
