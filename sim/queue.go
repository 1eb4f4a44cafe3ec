package sim

import "time"

// handler receives an event. Handlers are pointers to the model's own types,
// so scheduling an event allocates nothing beyond the queue's slice.
type handler interface {
	handle(s *Machine, arg int64)
}

type event struct {
	at  time.Duration
	seq uint64 // ties go in the order events were scheduled
	h   handler
	arg int64
}

// queue is a binary min-heap of events by (at, seq): a fixed order for ties,
// so a run is the same every time.
type queue struct {
	ev  []event
	seq uint64
}

func (q *queue) less(i, j int) bool {
	a, b := &q.ev[i], &q.ev[j]
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}

func (q *queue) push(at time.Duration, h handler, arg int64) {
	q.seq++
	q.ev = append(q.ev, event{at: at, seq: q.seq, h: h, arg: arg})
	i := len(q.ev) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.ev[i], q.ev[p] = q.ev[p], q.ev[i]
		i = p
	}
}

func (q *queue) pop() event {
	top := q.ev[0]
	n := len(q.ev) - 1
	q.ev[0] = q.ev[n]
	q.ev[n] = event{}
	q.ev = q.ev[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && q.less(l, m) {
			m = l
		}
		if r < n && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q.ev[i], q.ev[m] = q.ev[m], q.ev[i]
		i = m
	}
	return top
}

func (q *queue) len() int { return len(q.ev) }

// coreQueue holds each core's one pending event, keyed like the main queue,
// in a heap indexed by core: rescheduling a core moves its entry instead of
// leaving a stale event behind, so the heaps stay small.
type coreQueue struct {
	heap []*core // by (at, seq)
}

func (q *coreQueue) less(i, j int) bool {
	a, b := q.heap[i], q.heap[j]
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}

func (q *coreQueue) swap(i, j int) {
	q.heap[i], q.heap[j] = q.heap[j], q.heap[i]
	q.heap[i].pos, q.heap[j].pos = i, j
}

func (q *coreQueue) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.swap(i, p)
		i = p
	}
}

func (q *coreQueue) down(i int) {
	n := len(q.heap)
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && q.less(l, m) {
			m = l
		}
		if r < n && q.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		q.swap(i, m)
		i = m
	}
}

// set schedules c's event (or moves it).
func (q *coreQueue) set(c *core) {
	if c.pos < 0 {
		c.pos = len(q.heap)
		q.heap = append(q.heap, c)
		q.up(c.pos)
		return
	}
	q.up(c.pos)
	q.down(c.pos)
}

// remove drops c's event, if it has one.
func (q *coreQueue) remove(c *core) {
	i := c.pos
	if i < 0 {
		return
	}
	last := len(q.heap) - 1
	q.swap(i, last)
	q.heap = q.heap[:last]
	c.pos = -1
	if i < last {
		q.up(i)
		q.down(i)
	}
}
