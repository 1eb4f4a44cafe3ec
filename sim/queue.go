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
