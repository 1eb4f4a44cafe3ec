package cfs

import "time"

// The ladder in one pass. Whether a period ends throttled depends only on
// its sum of work and on what the periods before carry over: the backlog
// waiting at its start and the runtime in the pool. While the demand never
// asks for more CPUs than it has (every sample's rate at most Cores), a
// period with backlog B, pool P and work w serves
//
//	served = min(B + w, Cores*period, P)
//
// (waiting work catches up at Cores and never falls behind again once
// caught up; nothing runs once the pool is dry until the refill), and ends
// throttled when the pool is dry and work still waits. CountLadder carries
// (backlog, pool, timer) for every setting through the period sums at once,
// and calls Refill's bookkeeping as Replay does, so nr_periods and
// nr_throttled come out as Replay counts them.
//
// Replay's floats carry tiny residues (a catch-up that leaves under Eps of
// backlog forgives it; sums of partial takes round), so a decision that
// lies within a margin of its threshold cannot be taken from the sums
// exactly: CountLadder then says so (Count.Exact false) and the caller
// replays that setting. So do demand bound to wall-clock time, demand that
// holds arrivals (Reconstruct's moved work, which may arrive faster than
// Cores), and a sample faster than Cores: there catch-up is not the min
// above.

// Count is nr_periods and nr_throttled as Replay would count them, when
// Exact; otherwise the counts are not given and the setting must be
// replayed.
type Count struct {
	Periods, ThrottledPeriods uint64
	Exact                     bool
}

// ladderMargin is how close (ns) to a threshold a decision from the sums
// may come before CountLadder leaves it to Replay: far above Replay's float
// residues and the Eps it forgives per catch-up.
const ladderMargin = 1e3

// CountLadder counts the periods and throttled periods of every setting at
// ps's phase in one pass over the period sums: what Replay's Stat would
// say, without its per-sample walk. Bursts, throttled time and delays need
// Replay.
func (ps *Periods) CountLadder(settings []Setting) []Count {
	out := make([]Count, len(settings))
	d := ps.d
	type state struct {
		backlog, pool     float64
		quota, cap, cores float64
		bmax              float64 // largest backlog since it was last exactly 0
		active, idle      bool
		c                 *Count
	}
	maxRate := 0.0
	for i := 1; i < len(d.At); i++ {
		maxRate = max(maxRate, float64(d.Usage[i]-d.Usage[i-1])/float64(d.At[i]-d.At[i-1]))
	}
	var live []*state
	for i, s := range settings {
		out[i].Exact = true
		if s.WallClock || d.Arrivals || maxRate > s.Cores {
			out[i].Exact = false
			continue
		}
		live = append(live, &state{pool: float64(s.Quota), quota: float64(s.Quota), cap: float64(s.Quota + s.Burst),
			cores: s.Cores, c: &out[i]})
	}
	near := func(a, b, bmax float64) bool { return a-b < ladderMargin+1e-9*bmax && b-a < ladderMargin+1e-9*bmax }
	end := d.At[len(d.At)-1]
	for k, w := range ps.Work {
		// Catch-up runs only while there are samples: the first period
		// from time 0, the last to the last sample.
		tick0 := ps.Start + time.Duration(k)*ps.Period
		span := float64(min(tick0+ps.Period, end) - max(tick0, 0))
		n := 0
		for _, st := range live {
			ct := st.cores * span
			b, p := st.backlog, st.pool
			throttled, took := false, false
			if near(b, Eps, st.bmax) && b != 0 || near(w, p-Eps, st.bmax) {
				st.c.Exact = false
				continue
			}
			if b <= Eps && w <= p-Eps {
				// Replay's fast path: served on arrival.
				took = w > 0
				st.pool = p - w
			} else {
				bw := b + w
				served := min(bw, ct, p)
				// The smallest of the three must be clear of the others.
				if (served != bw && near(served, bw, st.bmax)) || (served != ct && near(served, ct, st.bmax)) || (served != p && near(served, p, st.bmax)) {
					st.c.Exact = false
					continue
				}
				took = served > 0
				st.pool = p - served
				switch served {
				case bw:
					st.backlog, st.bmax = 0, 0
				default:
					st.backlog = bw - served
					st.bmax = max(st.bmax, st.backlog)
				}
				throttled = served == p && st.backlog > Eps
			}
			if took {
				st.active, st.idle = true, false
			}
			if st.active {
				// Bandwidth.Refill's bookkeeping.
				st.c.Periods++
				st.pool = min(st.pool+st.quota, st.cap)
				switch {
				case st.idle && !throttled:
					st.active = false
				case !throttled:
					st.idle = true
				default:
					st.c.ThrottledPeriods++
					st.idle = false
				}
			}
			live[n] = st
			n++
		}
		live = live[:n]
	}
	for i := range out {
		if !out[i].Exact {
			out[i].Periods, out[i].ThrottledPeriods = 0, 0
		}
	}
	return out
}
