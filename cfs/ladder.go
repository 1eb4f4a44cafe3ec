package cfs

import (
	"math"
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

// CountLadder counts the periods and throttled periods of every setting at
// ps's phase in one pass over the period sums: what Replay's Stat would
// say, without its per-sample walk. Bursts, throttled time and delays need
// Replay.
func (ps *Periods) CountLadder(settings []Setting) []Count {
	out := make([]Count, len(settings))
	d := ps.d
	// caps[c] is, for each period, what its samples allow c CPUs to serve
	// of the work waiting at its start and arriving in it: cap.room, and
	// cap.left the work that still waits at its end however little waited
	// at its start. Use as sampled is served as it comes, and waiting work
	// catches up beside it on what it leaves of c (while use runs faster
	// than c, waiting work waits on): room is w plus that slack, left 0.
	// Arrivals (Demand.Arrivals) queue for c CPUs: room is c times the
	// period, left the queue a period starting empty ends with.
	caps := map[float64][]capacity{}
	capsOf := func(c float64) []capacity {
		if cs, ok := caps[c]; ok {
			return cs
		}
		cs := make([]capacity, len(ps.Work))
		for k := range ps.Work {
			tick0 := ps.Start + time.Duration(k)*ps.Period
			tick1 := tick0 + ps.Period
			var slack, q float64
			for i := int(ps.firstIx[k]); i <= int(ps.firstIx[k+1]) && i < len(d.At); i++ {
				a, b := max(d.At[i-1], tick0, 0), min(d.At[i], tick1)
				if b <= a {
					continue
				}
				r := float64(d.Usage[i]-d.Usage[i-1]) / float64(d.At[i]-d.At[i-1])
				if r < c {
					slack += (c - r) * float64(b-a)
				}
				q = max(0, q+(r-c)*float64(b-a))
			}
			cs[k] = capacity{room: ps.Work[k] + slack}
			if d.Arrivals {
				cs[k] = capacity{room: c * float64(min(tick1, d.At[len(d.At)-1])-max(tick0, 0)), left: q}
			}
		}
		caps[c] = cs
		return cs
	}
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
	return out
}

// capacity is what one period can serve of waiting and arriving work (see
// CountLadder's caps).
type capacity struct{ room, left float64 }

// count is CountLadder's pass for one setting.
func (ps *Periods) count(s Setting, caps []capacity) Count {
	var c Count
	var (
		backlog      float64
		m            = float64(ladderMargin) // the margin, grown with the largest backlog since it was last exactly 0
		pool         = float64(s.Quota)
		quota, cap   = float64(s.Quota), float64(s.Quota + s.Burst)
		active, idle bool
	)
	for k, w := range ps.Work {
		b, p := backlog, pool
		throttled, took := false, false
		if b != 0 && near(b, Eps, m) || near(w, p-Eps, m) {
			return Count{}
		}
		if b <= Eps && w <= p-Eps {
			// Replay's fast path: served on arrival.
			took = w > 0
			pool = p - w
		} else {
			bw, ct := b+w-caps[k].left, caps[k].room
			served := min(bw, ct, p)
			// The smallest of the three must be clear of the others.
			if (served != bw && near(served, bw, m)) || (served != ct && near(served, ct, m)) || (served != p && near(served, p, m)) {
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
	}
	c.Exact = true
	return c
}

// near reports whether a and b lie within m of each other.
func near(a, b, m float64) bool { return math.Abs(a-b) < m }
