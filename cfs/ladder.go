package cfs

import (
	"math"
	"sync"
	"time"
)

// The ladder in one pass. Whether a period ends throttled depends only on
// its sum of work and on what the periods before carry over: the backlog
// waiting at its start and the runtime in the pool. A period with backlog
// B, pool P and work w serves
//
//	served = min(B + w, w + slack, P)
//
// where slack is what the period leaves of Cores CPUs beside its own
// arrivals (waiting work catches up at Cores, or waits on while arrivals
// run faster; once caught up it never falls behind again before the pool
// is dry; nothing runs once the pool is dry until the refill), and ends
// throttled when the pool is dry and work still waits. CountLadder carries
// (backlog, pool, timer) for every setting through the period sums at once,
// and calls Refill's bookkeeping as Replay does, so nr_periods and
// nr_throttled come out as Replay counts them.
//
// Most periods need less: a setting steps over a block of periods that
// each serve their work on arrival (the busiest well under the quota,
// nothing waiting, the timer settled) or that each end throttled (so much
// waits that every period serves its whole pool), with the block's sums;
// and the slack of a period is only walked when the pool could reach it.
//
// Replay's floats carry tiny residues (a catch-up that leaves under Eps of
// backlog forgives it; sums of partial takes round), so a decision that
// lies within a margin of its threshold cannot be taken from the sums
// exactly: CountLadder then says so (Count.Exact false) and the caller
// replays that setting. So do demand bound to wall-clock time and demand
// that holds arrivals (Reconstruct's moved work, which Replay serves at
// Cores even while it arrives faster): there catch-up is not the min above.

// Count is nr_periods and nr_throttled as Replay would count them, when
// Exact; otherwise the counts are not given and the setting must be
// replayed.
type Count struct {
	Periods, ThrottledPeriods uint64
	Exact                     bool
}

// ladderMargin is how close (ns) to a threshold a decision from the sums
// may come before CountLadder leaves it to Replay: above the Eps Replay
// forgives when a catch-up ends and the Eps of runtime it leaves in a pool
// it calls dry, and far above its float residues (a backlog's grow with its
// size: ladderRel of the largest since it was last 0).
const (
	ladderMargin = 4
	ladderRel    = 1e-12
)

// fineMargin is the margin (ns) of the fast path's test while the pool is
// Replay's up to rounding (nothing waits, and since its last refill to the
// cap every period took the fast path, which takes as Replay does): far
// above the rounding of sums of ns up to 1e12, and far below ladderMargin,
// which a day of period sums crosses now and then (one period within 4 ns
// of its quota left a whole setting to Replay).
const fineMargin = 1e-3

// tieRound is how close (ns) two candidates for what a period serves must
// be to be the same up to rounding.
const tieRound = 1e-6

// CountLadder counts the periods and throttled periods of every setting at
// ps's phase in one pass over the period sums: what Replay's Stat would
// say, without its per-sample walk. Bursts, throttled time and delays need
// Replay.
func (ps *Periods) CountLadder(settings []Setting) []Count {
	out := make([]Count, len(settings))
	// caps[c] is, for each period, what its samples allow c CPUs to serve
	// of the work waiting at its start and arriving in it (capAt), taken
	// when a setting first needs it: a period every setting serves on
	// arrival needs none.
	caps := map[float64]*capTable{}
	capsOf := func(c float64) *capTable {
		if t, ok := caps[c]; ok {
			return t
		}
		t := &capTable{ps: ps, c: c, pages: make([]*capPage, (len(ps.Work)+capPageLen-1)/capPageLen)}
		caps[c] = t
		return t
	}
	ps.blocks()
	// A quota that covers the busiest period never leaves Replay's fast
	// path: every such setting counts as the first one does.
	maxW := 0.0
	for _, w := range ps.Work {
		maxW = max(maxW, w)
	}
	free := -1
	for i, s := range settings {
		if s.WallClock {
			continue
		}
		isFree := float64(s.Quota)-Eps >= maxW+ladderMargin
		if isFree && free >= 0 {
			out[i] = out[free]
			continue
		}
		out[i] = ps.count(s, capsOf(s.Cores))
		if isFree {
			free = i
		}
	}
	for _, t := range caps {
		t.release()
	}
	return out
}

// capacity is what one period can serve of waiting and arriving work (see
// capAt).
type capacity struct{ room, left float64 }

// capTable is each period's capacity for c CPUs, taken when first needed,
// in pages of capPageLen periods made when first needed: a day at 100 ms
// is 864 000 periods, and most of them take the fast path on every
// setting, so a table for them all (17 bytes a period, in each of the
// calls that run at once) was most of the one pass's memory.
type capTable struct {
	ps    *Periods
	c     float64
	pages []*capPage
}

// capPageLen is how many periods' capacities a page holds.
const capPageLen = 1024

// capPage is the capacities of capPageLen periods, and which are taken:
// of each only what takes the samples to know (capAt's one value), 8
// bytes a period, not 16.
type capPage struct {
	vs   [capPageLen]float64
	done [capPageLen]bool
}

// capPages lends pages from one CountLadder call to the next: made anew
// in each call, a day's pages were a large part of the heap a process
// grows by before the collector runs (what its resident size follows).
var capPages = sync.Pool{New: func() any { return new(capPage) }}

// release gives t's pages back to capPages, none taken.
func (t *capTable) release() {
	for i, pg := range t.pages {
		if pg != nil {
			clear(pg.done[:])
			capPages.Put(pg)
			t.pages[i] = nil
		}
	}
}

// at returns period k's capacity.
func (t *capTable) at(k int) capacity {
	pg := t.pages[k/capPageLen]
	if pg == nil {
		pg = capPages.Get().(*capPage)
		t.pages[k/capPageLen] = pg
	}
	if i := k % capPageLen; !pg.done[i] {
		pg.vs[i], pg.done[i] = t.ps.capAt(k, t.c), true
	}
	v := pg.vs[k%capPageLen]
	if t.ps.d.Arrivals {
		return capacity{room: t.ps.arrivalRoom(k, t.c), left: v}
	}
	return capacity{room: v}
}

// arrivalRoom is period k's room for arrivals (Demand.Arrivals) on c
// CPUs: c times the part of the period the samples cover.
func (ps *Periods) arrivalRoom(k int, c float64) float64 {
	tick0 := ps.Start + time.Duration(k)*ps.Period
	tick1 := tick0 + ps.Period
	return c * float64(min(tick1, ps.d.at(len(ps.d.At)-1))-max(tick0, 0))
}

// capAt is what period k's samples allow c CPUs to serve of the work
// waiting at its start and arriving in it: room, and left the work that
// still waits at its end however little waited at its start. Use as
// sampled is served as it comes, and waiting work catches up beside it on
// what it leaves of c (while use runs faster than c, waiting work waits
// on): room is w plus that slack, left 0. Arrivals (Demand.Arrivals) queue
// for c CPUs: room is c times the period, left the queue a period starting
// empty ends with. It returns what takes the samples to know: room for
// use as sampled (left is 0), left for arrivals (room is arrivalRoom).
func (ps *Periods) capAt(k int, c float64) float64 {
	d := ps.d
	tick0 := ps.Start + time.Duration(k)*ps.Period
	tick1 := tick0 + ps.Period
	var slack, q float64
	for i, last := ps.firstIx.at(k), ps.firstIx.at(k+1); i <= last && i < len(d.At); i++ {
		a, b := max(d.at(i-1), tick0, 0), min(d.at(i), tick1)
		if b <= a {
			continue
		}
		r := float64(d.du(i)) / float64(d.At[i]-d.At[i-1])
		if r < c {
			slack += (c - r) * float64(b-a)
		}
		q = max(0, q+(r-c)*float64(b-a))
	}
	if d.Arrivals {
		return q
	}
	return ps.Work[k] + slack
}

// skipBlock is how many periods the one pass may step over at once: a
// block of periods each of which every setting whose quota lies well
// above its busiest period serves on arrival.
const skipBlock = 16

// blockSums is what the one pass needs of a block of skipBlock periods to
// step over it: its busiest period, how many of its periods the timer
// counts when the group enters it settled (took[k] || took[k-1], took[k]
// being work > 0 in period k), and its work.
type blockSums struct {
	maxW    float64
	counted uint64
	work    float64
}

// blocks sums ps's whole blocks of periods (once).
func (ps *Periods) blocks() { ps.blocksOnce.Do(ps.sumBlocks) }

// sumBlocks makes blockSums.
func (ps *Periods) sumBlocks() {
	n := len(ps.Work) / skipBlock
	ps.blockSums = make([]blockSums, n)
	for b := range n {
		var bs blockSums
		for k := b * skipBlock; k < (b+1)*skipBlock; k++ {
			w := ps.Work[k]
			bs.maxW = max(bs.maxW, w)
			bs.work += w
			if w > 0 || (k > 0 && ps.Work[k-1] > 0) {
				bs.counted++
			}
		}
		ps.blockSums[b] = bs
	}
}

// count is CountLadder's pass for one setting.
func (ps *Periods) count(s Setting, caps *capTable) Count {
	var c Count
	var (
		backlog      float64
		m            = float64(ladderMargin) // the margin, grown with the largest backlog since it was last exactly 0
		pool         = float64(s.Quota)
		quota, cap   = float64(s.Quota), float64(s.Quota + s.Burst)
		active, idle bool
		// fine: pool is Replay's up to float rounding, not up to the Eps
		// a dry pool may keep (see below).
		fine = true
		// A block whose busiest period lies this far under the quota is
		// served on arrival in every period, the pool starting each at the
		// quota or more, by the tests below with ladderMargin (nothing
		// waits) and rounding to spare.
		skipBelow = quota - Eps - ladderMargin - 2*fineMargin
		n         = len(ps.Work)
		d         = ps.d
		from, to  = max(0, d.at(0)), d.at(len(d.At) - 1) // the span the samples cover
	)
	for k := 0; k < n; {
		// Step over a block that every period of serves on arrival, with
		// nothing waiting, entered settled (the timer's state is what the
		// period before's work alone makes it): the same counts, and the
		// pool refilled as period by period, in one step. The pool only
		// grows in such a block (no period takes more than the quota), so
		// the cap, once reached, holds.
		if k%skipBlock == 0 && backlog == 0 && k/skipBlock < len(ps.blockSums) && ps.blockSums[k/skipBlock].maxW <= skipBelow &&
			((k > 0 && ps.Work[k-1] > 0 && active && idle) || ((k == 0 || ps.Work[k-1] <= 0) && !active)) {
			bs := ps.blockSums[k/skipBlock]
			c.Periods += bs.counted
			if bs.counted > 0 {
				pool = min(pool+float64(bs.counted)*quota-bs.work, cap)
				fine = fine || s.Burst == 0
			}
			k += skipBlock
			active, idle = ps.Work[k-1] > 0, true
			continue
		}
		// Step over a block in which so much waits that every period ends
		// throttled: each serves its pool, clear below what waits and below
		// the room use as sampled leaves (Cores x span, see below), and the
		// refill leaves the quota.
		if k%skipBlock == 0 && backlog > 0 && k/skipBlock < len(ps.blockSums) && !d.Arrivals {
			bs := ps.blockSums[k/skipBlock]
			mb := max(m, ladderMargin+ladderRel*(backlog+bs.work)) // the margin over the block
			tick0 := ps.Start + time.Duration(k)*ps.Period
			if tick0 >= from && tick0+skipBlock*ps.Period <= to && max(pool, quota)+mb+1 <= s.Cores*float64(ps.Period) &&
				backlog >= pool+skipBlock*quota+2*mb+1 {
				c.Periods += skipBlock
				c.ThrottledPeriods += skipBlock
				backlog += bs.work - pool - (skipBlock-1)*quota
				pool, m = quota, mb
				active, idle, fine = true, false, s.Burst == 0
				k += skipBlock
				continue
			}
		}
		w := ps.Work[k]
		b, p := backlog, pool
		throttled, took := false, false
		// Whether the period takes Replay's fast path (nothing waits, w <=
		// pool - Eps) must be clear by the margin: with nothing waiting and
		// the pool Replay's own, only rounding separates the two sides.
		// With work waiting clear above Eps neither side takes it, whatever
		// w; work waiting near Eps is left to Replay.
		mw := m
		if fine {
			mw = fineMargin
		}
		fast := false
		switch {
		case b == 0 && w <= p-Eps-mw:
			fast = true
		case b == 0 && w < p-Eps+mw, b != 0 && b < Eps+m: // near(w, p-Eps, mw), near(b, Eps, m)
			return Count{}
		}
		if fast {
			// Replay's fast path: served on arrival, as Replay takes it.
			took = w > 0
			pool = p - w
		} else {
			fine0 := fine // the pool at the start is Replay's up to rounding
			fine = false
			bw, ct := b+w, math.Inf(1)
			// Use as sampled leaves room of at least Cores x span (it
			// serves w, and its slack is what it leaves of Cores): a pool
			// clear below that for a whole period never meets it.
			if tick0 := ps.Start + time.Duration(k)*ps.Period; d.Arrivals || p+m+1 > s.Cores*float64(ps.Period) || tick0 < from || tick0+ps.Period > to {
				cp := caps.at(k)
				bw, ct = b+w-cp.left, cp.room
			}
			served := min(bw, ct, p)
			// The smallest of the three must be clear of the others; but
			// bw and ct equal up to rounding (work that arrives faster
			// than Cores serve it, in a period that starts with none
			// waiting: all it leaves waiting is left either way) are one
			// candidate, and serving either leaves the same backlog.
			var clear bool
			if fine0 && b == 0 && math.Abs(bw-p) <= tieRound && !near(ct, p, m) && ct > p {
				// What waits equals the pool up to rounding, and the pool is
				// Replay's: Replay runs it dry (it keeps at most rounding,
				// under Eps) and what is left waiting is what the period's
				// own arrivals leave (cp.left), throttled if that is clear
				// above Eps (else the next period leaves it to Replay).
				served, clear = p, true
			} else if x := min(bw, ct); math.Abs(bw-ct) <= tieRound {
				clear = x == p || !near(x, p, m)
			} else {
				clear = (served == bw || !near(served, bw, m)) && (served == ct || !near(served, ct, m)) && (served == p || !near(served, p, m))
			}
			if !clear {
				return Count{}
			}
			took = served > 0
			pool = p - served
			if served == b+w {
				backlog, m = 0, ladderMargin
			} else {
				backlog = b + w - served
				m = max(m, ladderMargin+ladderRel*backlog)
			}
			throttled = served == p && backlog > Eps
		}
		if took {
			active, idle = true, false
		}
		if active {
			// Bandwidth.Refill's bookkeeping.
			c.Periods++
			// A pool refilled to its cap is Replay's again: without burst
			// Replay's pool ends a period at no less than rounding below 0,
			// and with burst one refilled above the cap by more than the
			// margin is capped on both sides.
			fine = fine || s.Burst == 0 || pool+quota >= cap+m
			pool = min(pool+quota, cap)
			switch {
			case idle && !throttled:
				active = false
			case !throttled:
				idle = true
			default:
				c.ThrottledPeriods++
				idle = false
			}
		}
		k++
	}
	c.Exact = true
	return c
}

// near reports whether a and b lie within m of each other.
func near(a, b, m float64) bool { return a-b < m && b-a < m }
