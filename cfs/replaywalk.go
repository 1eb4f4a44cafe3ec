package cfs

import "time"

// Scratch is storage one replay lends the next (a worker's, reused from
// replay to replay); its zero value is ready.
type Scratch struct {
	queues [][]chunk // each setting's queue of work waiting
	pieces []piece   // a period's pieces of samples
}

// compactAfter is how many chunks served must lie at the queue's head
// before Replay moves the rest to the front (and at least half the queue).
const compactAfter = 1024

// walk is how Replay walks the periods: its zero value is Replay's own; a
// test compares against a queue never compacted and the period by period
// walk.
type walk struct {
	// neverCompact keeps the chunks served at the queue's head
	// (compactAfter); periodByPeriod steps through runs of periods served on
	// arrival with a full pool one by one (see replayer.step).
	neverCompact, periodByPeriod bool
}

// chunk is work that arrived over one sample (or the part of it in one
// period, before or after the pool ran dry) and is not served yet: mid is
// the middle of its arrival, dur its length, a the cumulative arrival up to
// its end, w its size. Its delay is its middle's. A chunk is split where
// the pool runs dry, on arrival and while it is served (also where the
// pool runs dry while held-back work catching up had already served part
// of the sample), so that no chunk's delay stands for work on both sides
// of a wait for the refill.
type chunk struct {
	mid, dur float64
	a, w     float64
}

// piece is the part of one sample inside a period, as every setting's
// replay reads it: from t to tb (ns from the period's start; small numbers
// keep float steps exact), l ns long, its work arriving at r cores (a late
// reading's spread within the period, lateReading, already applied). The
// pieces of a period depend on the demand and the cores, not on the quota:
// a walk of several settings makes them once.
type piece struct {
	t, tb, l, r float64
}

// Replay runs the demand ps was cut from through one quota at ps's phase,
// adding the delay of every ns of work to hist. With hist nil it counts
// only: the Result's Stat, ThrottledNs and LostNs are the same, and the
// queue of work waiting, which only serves the delays, is not kept.
// scratch, if not nil, lends the queue's storage and gets it back grown.
func (ps *Periods) Replay(s Setting, hist *DelayHist, scratch *Scratch) Result {
	return ps.replay([]Setting{s}, []*DelayHist{hist}, scratch, walk{})[0]
}

// ReplayMany replays every setting as Replay does, adding setting i's
// delays to hists[i] (nil: counts only), in one walk over the demand: a
// period's samples are read once for all the settings that walk them, not
// once for each. The results are the same as Replay's, bit for bit: each
// setting's arithmetic is Replay's, in Replay's order. Settings that do not
// share Cores and WallClock with the first are replayed on their own.
// hists must be as long as settings.
func (ps *Periods) ReplayMany(settings []Setting, hists []*DelayHist, scratch *Scratch) []Result {
	if len(settings) == 0 {
		return nil
	}
	var same, other []int
	for i, s := range settings {
		if s.Cores == settings[0].Cores && s.WallClock == settings[0].WallClock {
			same = append(same, i)
		} else {
			other = append(other, i)
		}
	}
	if len(other) == 0 {
		return ps.replay(settings, hists, scratch, walk{})
	}
	out := make([]Result, len(settings))
	for _, ix := range [][]int{same, other} {
		ss, hs := make([]Setting, len(ix)), make([]*DelayHist, len(ix))
		for k, i := range ix {
			ss[k], hs[k] = settings[i], hists[i]
		}
		rs := ps.ReplayMany(ss, hs, scratch)
		for k, i := range ix {
			out[i] = rs[k]
		}
	}
	return out
}

// replay is ReplayMany of settings that share Cores and WallClock, walking
// the periods as wk says: each setting steps over the periods where it
// needs none of their samples on its own (replayer.step), and the
// settings that need a period's samples walk its pieces, made once.
func (ps *Periods) replay(settings []Setting, hists []*DelayHist, scratch *Scratch, wk walk) []Result {
	rps := make([]replayer, len(settings))
	if scratch == nil {
		scratch = &Scratch{}
	}
	for len(scratch.queues) < len(settings) {
		scratch.queues = append(scratch.queues, nil)
	}
	for j, s := range settings {
		rps[j] = replayer{
			bw: NewBandwidth(s.Quota, ps.Period, s.Burst), hist: hists[j], res: Result{Hist: hists[j]},
			queue: scratch.queues[j][:0], full: float64(s.Quota + s.Burst), settled: float64(s.Quota) - 1,
		}
	}
	cores, wallClock := settings[0].Cores, settings[0].WallClock
	pieces := scratch.pieces[:0]
	if len(rps) == 1 {
		// One setting: its walk runs on through the periods it walks,
		// its state held in the walk's locals.
		rp := &rps[0]
		for k := 0; k < len(ps.Work); {
			if rp.step(ps, k, wk.periodByPeriod) {
				k = rp.upto
				continue
			}
			k, pieces = rp.walk(ps, k, pieces, true, cores, wallClock, wk)
		}
	}
	for k, n := 0, len(ps.Work); k < n && len(rps) > 1; {
		made, next := false, n
		for j := range rps {
			rp := &rps[j]
			if rp.upto == k && !rp.step(ps, k, wk.periodByPeriod) {
				if !made {
					pieces, made = ps.pieces(k, cores, pieces), true
				}
				rp.upto, _ = rp.walk(ps, k, pieces, false, cores, wallClock, wk)
			}
			next = min(next, rp.upto)
		}
		k = next
	}
	scratch.pieces = pieces[:0]
	out := make([]Result, len(rps))
	for j := range rps {
		out[j] = rps[j].finish(ps.d)
		scratch.queues[j] = rps[j].queue[:0]
	}
	return out
}

// pieces returns the pieces of period k's samples, in buf's storage.
func (ps *Periods) pieces(k int, cores float64, buf []piece) []piece {
	d := ps.d
	tick0 := ps.Start + time.Duration(k)*ps.Period
	tick1 := tick0 + ps.Period
	late := 0.0 // work of late readings still to arrive in this period (ns)
	buf = buf[:0]
	i, last := ps.firstIx.at(k), ps.firstIx.at(k+1)
	if i > last || i >= len(d.At) {
		return buf
	}
	// The use at each sample, read once: a scaled demand's rounding
	// (UsageAt) is done once a sample, not twice (du).
	u0 := d.UsageAt(i - 1)
	for ; i <= last && i < len(d.At); i++ {
		u1 := d.UsageAt(i)
		du := u1 - u0 // du(i)
		u0 = u1
		a := max(d.at(i-1), tick0, 0)
		b := min(d.at(i), tick1)
		if b <= a {
			continue
		}
		r := float64(du) / float64(d.At[i]-d.At[i-1]) // cores
		if !d.Arrivals && cores > 0 {
			r, late = lateReading(r, late, float64(b-a), cores, b == tick1 || i == len(d.At)-1)
		}
		buf = append(buf, piece{t: float64(a - tick0), tb: float64(b - tick0), l: float64(b - a), r: r})
	}
	return buf
}

// replayer is one setting's replay between periods.
type replayer struct {
	bw      Bandwidth
	res     Result
	hist    *DelayHist
	backlog float64 // work waiting (ns)
	arrived float64 // cumulative work arrived
	served  float64 // cumulative work served
	served0 float64 // work served on arrival by the fast path
	queue   []chunk // work waiting, oldest first (from qh)
	qh      int     // head of queue
	upto    int     // the next period to replay
	// the last catch-up: from time lt0 and cumulative ls0 at rate ls
	lt0, ls0, ls float64
	// A period of work at least 1 ns under the quota (settled), with
	// nothing waiting and the pool full (full), is served on arrival and
	// leaves the pool full: the refill gives back more than it took, the
	// cap cuts it to exactly the cap, and no burst is used.
	full, settled float64
}

// take takes amt of runtime from the pool.
func (rp *replayer) take(amt float64) {
	if amt <= 0 {
		return
	}
	rp.bw.Start()
	rp.bw.Take(amt)
}

// step replays period k, and the periods after it that it can, where none
// of their samples is needed, and reports whether it did (upto is then the
// next period to replay). A run of periods under the quota, from a period
// with nothing waiting and a full pool, only counts them and adds up their
// work, in the order the walk would (not when byPeriod: the test's
// reference); a period whose work the pool covers with nothing waiting is
// served on arrival.
func (rp *replayer) step(ps *Periods, k int, byPeriod bool) bool {
	bw := &rp.bw
	if !byPeriod && rp.backlog <= Eps && bw.Pool == rp.full && bw.snap == rp.full {
		arrived, served0, active, idle, periods := rp.arrived, rp.served0, bw.active, bw.idle, bw.Stat.Periods
		k0 := k
		for ; k < len(ps.Work) && ps.Work[k] <= rp.settled; k++ {
			w := ps.Work[k]
			if w > 0 {
				active, idle = true, false // Start, Take
			}
			arrived += w
			served0 += w
			if active { // Refill(false)
				periods++
				if idle {
					active = false
				} else {
					idle = true
				}
			}
		}
		if k > k0 {
			rp.arrived, rp.served0, bw.active, bw.idle, bw.Stat.Periods = arrived, served0, active, idle, periods
			rp.served, rp.upto = arrived, k
			return true
		}
	}
	if w := ps.Work[k]; rp.backlog <= Eps && w <= bw.Pool-Eps {
		rp.take(w)
		rp.arrived += w
		rp.served = rp.arrived
		rp.served0 += w
		if bw.Running() {
			bw.Refill(false)
		}
		rp.upto = k + 1
		return true
	}
	return false
}

// walk replays period k over its pieces and returns the next period to
// replay and the pieces' storage. Alone (the one setting of a replay) it
// makes each period's pieces itself and runs on through the periods after
// k while they need their samples. The state it changes is held in locals
// while it walks (and the queue's service in closures that inline): the
// walk is most of a replay's time where work waits in most periods.
func (rp *replayer) walk(ps *Periods, k int, pieces []piece, alone bool, cores float64, wallClock bool, wk walk) (int, []piece) {
	d, hist, bw := ps.d, rp.hist, &rp.bw
	backlog, arrived, served := rp.backlog, rp.arrived, rp.served
	throttledNs, lostNs := rp.res.ThrottledNs, rp.res.LostNs
	queue, qh := rp.queue, rp.qh
	lt0, ls0, ls := rp.lt0, rp.ls0, rp.ls
	take := func(amt float64) {
		if amt <= 0 {
			return
		}
		bw.Start()
		bw.Take(amt)
	}
	// serveQueue records the delay of chunks the service passed: service ran
	// at rate s from cumulative s0 at time t0.
	serveQueue := func(t0, s0, s float64) {
		if hist == nil {
			return
		}
		for qh < len(queue) && queue[qh].a <= served+Eps {
			hist.Add(queue[qh].delay(t0, s0, s), queue[qh].w)
			qh++
		}
		if qh == len(queue) {
			queue, qh = queue[:0], 0
		}
	}
	// splitHead records the part of the queue's head that the service (at
	// rate s from cumulative s0 at time t0) passed, and leaves the rest.
	splitHead := func(t0, s0, s float64) {
		if hist != nil && qh < len(queue) {
			queue[qh].split(hist, t0, s0, s, served)
		}
	}
	for {
		if alone {
			pieces = ps.pieces(k, cores, pieces)
		}
		base := float64(ps.Start + time.Duration(k)*ps.Period)
		denied := false // wallClock: work found the pool dry this period
		for _, p := range pieces {
			r, t, tb := p.r, p.t, p.tb
			lost0 := lostNs
			seg, segArr := t, arrived // the part of the sample not queued yet
			dried := false            // the catch-up ran the pool dry in this sample
			for t < tb {
				var dt float64
				if hist != nil && bw.Pool <= Eps && !wallClock && t > seg && arrived > segArr {
					// The pool ran dry within the sample: what came
					// before is a chunk of its own.
					queue = append(queue, chunk{mid: base + (seg+t)/2, dur: t - seg, a: arrived, w: arrived - segArr})
					serveQueue(base+t, served, 0)
					if dried {
						splitHead(lt0, ls0, ls) // what the catch-up served of it before
					}
					seg, segArr = t, arrived
				}
				switch {
				case bw.Pool <= Eps && wallClock:
					// Dry: arrivals are lost; the group stays
					// throttled until the refill.
					dt = tb - t
					if r*dt > 0 {
						lostNs += r * dt
						denied = true
						throttledNs += dt * waitingCPUs(r, cores)
					}
				case bw.Pool <= Eps:
					// Dry: arrivals wait for the refill.
					dt = tb - t
					backlog += r * dt
					arrived += r * dt
					if backlog > Eps {
						throttledNs += dt * waitingCPUs(r, cores)
					}
				case backlog > Eps || (d.Arrivals && r > cores):
					// Waiting work catches up on up to cores CPUs;
					// moved work that arrives faster waits too.
					s := larger(cores, r)
					if d.Arrivals {
						s = cores
					}
					dt = tb - t
					if s > r {
						dt = smaller(dt, backlog/(s-r))
					}
					dt = smaller(dt, bw.Pool/s)
					s0 := served
					take(s * dt)
					served += s * dt
					arrived += r * dt
					backlog -= (s - r) * dt
					if backlog <= Eps {
						backlog, served = 0, arrived
					}
					serveQueue(base+t, s0, s)
					lt0, ls0, ls = base+t, s0, s
					if bw.Pool <= Eps {
						splitHead(lt0, ls0, ls)
						dried = true
					}
				case r <= 0:
					dt = tb - t
				default:
					dt = smaller(tb-t, bw.Pool/r)
					take(r * dt)
					served += r * dt
					arrived += r * dt
				}
				if t+dt <= t { // a step below float resolution: end the segment
					dt = tb - t
				}
				t += dt
			}
			if hist == nil {
				continue
			}
			if wallClock { // nothing waits: what ran, ran on arrival
				hist.Add(0, r*p.l-(lostNs-lost0))
				continue
			}
			if !wk.neverCompact && qh > compactAfter && qh >= len(queue)/2 {
				// Move the chunks still waiting to the front: the queue
				// holds what waits, not every sample since it last emptied
				// (a limit near the mean use leaves work waiting for hours).
				queue = queue[:copy(queue, queue[qh:])]
				qh = 0
			}
			switch {
			case arrived <= segArr:
			case qh == len(queue) && arrived <= served+Eps:
				// Nothing waits and the piece was served as it arrived:
				// serveQueue would take it at once, with no delay.
				hist.Add(0, arrived-segArr)
			default:
				queue = append(queue, chunk{mid: base + (seg+tb)/2, dur: tb - seg, a: arrived, w: arrived - segArr})
			}
			serveQueue(base+tb, served, 0)
			if dried {
				// The pool ran dry at the sample's end: the part of it the
				// catch-up served before is recorded now, not at the
				// refill's rate after the wait.
				splitHead(lt0, ls0, ls)
			}
		}
		if bw.Running() {
			bw.Refill(bw.Pool <= Eps && (backlog > Eps || denied))
		}
		k++
		if !alone || k == len(ps.Work) {
			break
		}
		// Alone, the walk runs on while the next period needs its samples
		// (while step would not take it).
		if w := ps.Work[k]; backlog <= Eps && (w <= bw.Pool-Eps || !wk.periodByPeriod && bw.Pool == rp.full && bw.snap == rp.full && w <= rp.settled) {
			break
		}
	}
	rp.backlog, rp.arrived, rp.served = backlog, arrived, served
	rp.res.ThrottledNs, rp.res.LostNs = throttledNs, lostNs
	rp.queue, rp.qh = queue, qh
	rp.lt0, rp.ls0, rp.ls = lt0, ls0, ls
	return k, pieces
}

// delay is how long c waited: service ran at rate s from cumulative s0 at
// time t0 (s 0: it caught up, c served as it arrived).
func (c *chunk) delay(t0, s0, s float64) float64 {
	dep := c.mid
	if s > 0 {
		dep = t0 + (c.a-c.w/2-s0)/s
	}
	return floor0(dep - c.mid)
}

// split records in hist the part of c (the queue's head) that the service
// (at rate s from cumulative s0 at time t0, having served served) passed,
// and leaves the rest in c.
func (c *chunk) split(hist *DelayHist, t0, s0, s, served float64) {
	if s <= 0 || c.a-c.w >= served-Eps {
		return
	}
	x := served - (c.a - c.w)
	start := c.mid - c.dur/2
	hist.Add(floor0(t0+(c.a-c.w+x/2-s0)/s-(start+c.dur*x/c.w/2)), x)
	c.mid, c.dur, c.w = start+c.dur*x/c.w+c.dur*(c.w-x)/c.w/2, c.dur*(c.w-x)/c.w, c.w-x
}

// finish ends the replay of demand d: work still waiting at the end waited
// at least until then.
func (rp *replayer) finish(d *Demand) Result {
	rp.res.Stat = rp.bw.Stat
	if rp.hist == nil {
		return rp.res
	}
	end := float64(d.at(len(d.At) - 1))
	if rp.qh < len(rp.queue) {
		rp.queue[rp.qh].split(rp.hist, rp.lt0, rp.ls0, rp.ls, rp.served)
	}
	for ; rp.qh < len(rp.queue); rp.qh++ {
		rp.hist.Add(floor0(end-rp.queue[rp.qh].mid), rp.queue[rp.qh].w)
	}
	rp.hist.Add(0, rp.served0)
	return rp.res
}
