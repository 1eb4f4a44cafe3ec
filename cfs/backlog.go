package cfs

import (
	"fmt"
	"slices"
	"time"
)

// Demand sampled under a quota that throttled is capped: the counters show
// the work the group ran, not when it asked for it. What they do say:
// arrivals A(t) are never below use U(t); while the group is throttled
// (nr_throttled went up within the last period, the kernel holding its
// queue until the period's refill) work waits, A > U; once the refill came
// and the group ran less than one CPU's worth of an interval, nothing waits
// any more (waiting work keeps a thread running), A = U.
// On a loaded host the counters come less regularly than that (see Push),
// so a streak ends only when no throttle follows within the next period or
// the group is seen running below a CPU for half a period.
// Between those facts the truth is unknown. Observed use is the least bursty
// demand that fits them; the most bursty one has all the work that ran from
// the start of the busy run (one CPU's worth of each interval or more) that
// led into a throttle until the group next ran less after a refill (a
// streak) arrive at the streak's first sample. Backlog makes that second one, sample by sample, so that the
// replay of a throttled group's samples does not take the kernel's spreading
// of its bursts for the demand (a 50 ms burst under a 20 ms quota runs as 20
// ms in each of three periods: replayed as use, a 25 ms quota would look
// enough).
//
// A streak longer than Hold is not moved (the group was throttled nearly
// all the time: the demand above the limit cannot be seen, and lumping
// seconds of work into one sample would invent a burst); Capped counts the
// time so passed on as observed use.

// DefaultHold is the longest streak Backlog moves: 20 periods of 100 ms.
const DefaultHold = 2 * time.Second

// Backlog turns a throttled group's cumulative use into the most bursty
// cumulative demand consistent with its throttling counters (see above).
// The zero value needs Period set; Push samples in time order.
type Backlog struct {
	// Period is the CFS period of the quota the samples were taken under.
	Period time.Duration
	// Hold is the longest streak moved (0: DefaultHold).
	Hold time.Duration
	// Moved is the time covered by streaks whose work was moved to their
	// start; Capped the time of streaks longer than Hold, passed on as
	// observed (both count the streaks' spans).
	Moved, Capped time.Duration

	have     bool
	last     reading
	lastThr  uint64
	buf      []reading // held: the last period (and its busy run), or a streak
	streak   bool
	sinceThr time.Duration // time since the last throttled sample in the streak
	end      int           // 1 + the index in buf of the streak's end, once seen (0: none)
	ran      time.Duration // time since the streak's last interval with no use or a CPU's worth
	calm2    bool          // ran reached half a period since the last throttle
	inRun    bool          // the last reading was busy
	runStart time.Duration // start of the last busy run
	runEnd   time.Duration // end of the last busy run
	// calm holds the use (cores) of the last intervals that were neither
	// busy nor in a streak; their median is the group's background work (a
	// runtime's timers, health checks), which keeps arriving through a
	// streak. The median leaves out a burst's ragged edges.
	calm   [64]float64
	calmN  int
	moving bool // move is emitting
}

// bgRate is the median of the calm intervals' use (0 before any).
func (b *Backlog) bgRate() float64 {
	n := min(b.calmN, len(b.calm))
	if n == 0 {
		return 0
	}
	v := append([]float64(nil), b.calm[:n]...)
	slices.Sort(v)
	return v[n/2]
}

// reading is one cumulative reading: time and CPU time used, and the use
// over the interval it ends (dt, du).
type reading struct{ At, Usage, dt, du time.Duration }

func (b *Backlog) hold() time.Duration {
	if b.Hold > 0 {
		return b.Hold
	}
	return DefaultHold
}

// Push takes the next reading: time at, cumulative use usage and the
// group's cumulative nr_throttled, and calls emit with readings of the
// demand, in order, each time it knows them (readings are held for about a
// period, and a streak until it ends). Times are passed on unchanged; usage
// may be moved earlier.
//
// The kernel counts nr_throttled when the period timer refills a group
// that is throttled (do_sched_cfs_period_timer), so the sample that shows
// it ends up to a period after the throttling began: the readings of the
// last period (and of a busy run that began before it) are held until a
// period has passed without it.
func (b *Backlog) Push(at, usage time.Duration, throttled uint64, emit func(at, usage time.Duration)) {
	if !b.have {
		b.have, b.last, b.lastThr = true, reading{At: at, Usage: usage}, throttled
		emit(at, usage)
		return
	}
	dt, du := at-b.last.At, usage-b.last.Usage
	thr := throttled > b.lastThr
	if dt <= 0 || usage < b.last.Usage || throttled < b.lastThr || dt > MaxGap {
		// Out of order, a counter that fell or a gap: no streak spans it.
		b.Flush(emit)
		b.last, b.lastThr = reading{At: at, Usage: usage}, throttled
		emit(at, usage)
		return
	}
	r := reading{at, usage, dt, du}
	b.last, b.lastThr = r, throttled
	b.buf = append(b.buf, r)
	// Busy: at least one CPU's worth of the interval ran. Waiting work keeps
	// a thread running whenever the group is not throttled, so a backlog
	// shows as busy intervals until it is drained.
	busy := float64(du) >= 0.9*float64(dt)
	if !b.streak {
		if thr {
			// The streak began with the first use held: readings before it
			// carried no work.
			k := 0
			for k < len(b.buf)-1 && b.buf[k].du == 0 {
				emit(b.buf[k].At, b.buf[k].Usage)
				k++
			}
			b.buf = append(b.buf[:0], b.buf[k:]...)
			b.streak, b.sinceThr = true, 0
			return
		}
		b.calmStep(r, emit)
		return
	}
	if thr {
		b.sinceThr, b.end, b.calm2 = 0, 0, false
	} else {
		b.sinceThr += dt
	}
	if !thr && du > 0 && !busy {
		b.ran += dt
		b.calm2 = b.calm2 || b.ran >= b.Period/2
	} else {
		b.ran = 0
	}
	if !thr && b.end == 0 && b.sinceThr > b.Period && !busy {
		// A period without a throttle, and less than a CPU busy: the
		// streak ended before this sample, whose own use arrived after it,
		// if no throttle comes in the next period.
		b.end = len(b.buf)
	}
	switch {
	case b.end > 0 && (b.sinceThr > 2*b.Period || b.calm2):
		// On a loaded host a group throttled in every period it gets its
		// CPU now and then is not (another task held the CPU), and a sample
		// read late shows a refill under an earlier stamp: a throttle
		// count that comes within two periods of the last one goes on with
		// the streak, unless since the last one the group ran, less than a
		// CPU, in every interval for half a period (neither throttled nor
		// waiting: a server's background work after its burst drained). The readings
		// after the streak's end go on as they came.
		rest := append([]reading(nil), b.buf[b.end-1:]...)
		b.buf = b.buf[:b.end-1]
		b.move(emit)
		for _, r := range rest {
			b.buf = append(b.buf, r)
			b.calmStep(r, emit)
		}
	case b.span() > b.hold():
		b.Capped += b.span()
		b.pass(emit)
	}
}

// calmStep takes reading r, held last in buf, outside a streak: it notes the
// busy run or the calm use, and emits what is older than the last period
// and a tick (where a throttle counted later began) and the busy run that
// led into it, up to Hold.
func (b *Backlog) calmStep(r reading, emit func(at, usage time.Duration)) {
	at, dt := r.At, r.dt
	if float64(r.du) >= 0.9*float64(dt) {
		if !b.inRun {
			b.inRun, b.runStart = true, at-dt
		}
		b.runEnd = at
	} else {
		b.inRun = false
		b.calm[b.calmN%len(b.calm)] = float64(r.du) / float64(dt)
		b.calmN++
	}
	cut := at - b.Period - dt
	if b.runEnd > cut && b.runStart < cut && at-b.runStart <= b.hold() {
		cut = b.runStart
	}
	k := 0
	for k < len(b.buf) && b.buf[k].At <= cut {
		emit(b.buf[k].At, b.buf[k].Usage)
		k++
	}
	if k > 0 {
		b.buf = append(b.buf[:0], b.buf[k:]...)
	}
}

// span is the time the held readings cover.
func (b *Backlog) span() time.Duration {
	if len(b.buf) == 0 {
		return 0
	}
	return b.buf[len(b.buf)-1].At - (b.buf[0].At - b.buf[0].dt)
}

// pass emits the held readings as observed.
func (b *Backlog) pass(emit func(at, usage time.Duration)) {
	for _, s := range b.buf {
		emit(s.At, s.Usage)
	}
	b.reset()
}

// move emits the held streak with its work at its first reading, but for
// the group's background use (bgRate), which goes on arriving through the
// streak as it did before it: moved too, it would leave the streak's later
// periods idle in the replay, where the kernel saw the group run (and
// counted them in nr_periods). Arrivals stay at or above use.
func (b *Backlog) move(emit func(at, usage time.Duration)) {
	if len(b.buf) == 0 {
		b.reset()
		return
	}
	b.Moved += b.span()
	last, bg := b.buf[len(b.buf)-1], b.bgRate()
	b.moving = true
	for _, s := range b.buf {
		trickle := time.Duration(bg * float64(last.At-s.At))
		emit(s.At, max(s.Usage, last.Usage-trickle))
	}
	b.moving = false
	b.reset()
}

// Moving reports, to an emit callback, whether the reading it is given is
// part of a streak whose work was moved (its usage holds arrivals).
func (b *Backlog) Moving() bool { return b.moving }

func (b *Backlog) reset() {
	b.buf, b.streak, b.sinceThr, b.inRun, b.end, b.ran, b.calm2 = b.buf[:0], false, 0, false, 0, 0, false
}

// Flush emits what is held as observed (the samples ended mid-streak: its
// end is unknown).
func (b *Backlog) Flush(emit func(at, usage time.Duration)) {
	b.pass(emit)
}

// Reconstruct is d with the work of every throttling streak moved to the
// streak's start (Backlog), given the group's cumulative nr_throttled at
// each of d's samples, taken under a quota with this period. The returned
// Backlog tells how much time was moved and how much was too long to move.
// The parallelism bound stays d's: moved work would inflate it.
func Reconstruct(d *Demand, throttled []uint64, period time.Duration) (*Demand, *Backlog) {
	b := &Backlog{Period: period}
	out := &Demand{At: make([]time.Duration, 0, len(d.At)), Usage: make([]time.Duration, 0, len(d.Usage)),
		Cores: int(d.Bound()), Excluded: d.Excluded, Warnings: d.Warnings}
	emit := func(at, usage time.Duration) {
		out.At, out.Usage = append(out.At, at), append(out.Usage, usage)
	}
	for i := range d.At {
		b.Push(d.At[i], d.Usage[i], throttled[i], emit)
	}
	b.Flush(emit)
	out.Moved, out.Capped, out.maxSeen = b.Moved, b.Capped, d.MaxCores()
	out.Arrivals = b.Moved > 0
	if len(out.At) == len(d.At) {
		out.PerCPU = d.PerCPU // the split of each interval, moved work or not
	}
	return out, b
}

// ReconstructNoted is Reconstruct with a warning in the demand when
// anything was throttled: how many periods, what was moved, and, for
// streaks too long to move, that the demand above the limit was not seen
// (advise again after raising the limit).
func ReconstructNoted(d *Demand, throttled []uint64, period time.Duration) *Demand {
	n := throttled[len(throttled)-1] - throttled[0]
	if n == 0 {
		return d
	}
	out, b := Reconstruct(d, throttled, period)
	w := fmt.Sprintf("the group was throttled in %d periods while sampled: its limit spread its bursts, so the demand is reconstructed from its throttling counters (%s of throttling streaks replayed as if their work had come at their start: an upper bound on how bursty it was)",
		n, b.Moved.Round(time.Millisecond))
	if b.Capped > 0 {
		w += fmt.Sprintf("; for %s it was throttled in streaks over %s, where the demand above the limit cannot be seen: the advice there is a floor, advise again after raising the limit", b.Capped.Round(time.Millisecond), b.hold())
	}
	out.Warnings = append(out.Warnings, w)
	return out
}
