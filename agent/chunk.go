package agent

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
)

// Chunk is the raw demand of one chunk, handed from the sampler to the
// replay: it holds no reference to the summary.
type Chunk struct {
	start    time.Duration
	n        int
	lead     time.Duration // idle time put before the first sample to set the phase
	cores    int
	arrivals bool   // work was moved into it (AddCounts): advise.Demand.Arrivals
	startup  bool   // it began in the start-up (SetStartup)
	deltas   []byte // as ContainerSummary's
	// ncpu and cpuDeltas are the per-CPU split of every interval (as
	// ContainerSummary's); 0 and nil: none.
	ncpu      int
	cpuDeltas []byte
}

// Add takes one sample: the container's cumulative usage at agent time at.
// Samples must come in time order; a usage that falls (the group was made
// again) or a gap over cfs.MaxGap closes the chunk and starts another. It
// returns a chunk that is complete, to be replayed (Replay) and folded in
// (Fold), else nil.
func (s *ContainerSummary) Add(at, usage time.Duration) *Chunk {
	if !s.have {
		s.firstPerCPU(at)
		s.start(at, usage)
		return nil
	}
	if at <= s.lastAt {
		return nil
	}
	dt, du := at-s.lastAt, usage-s.lastUsage
	if usage < s.lastUsage || dt > cfs.MaxGap {
		// A counter that fell (the group was made again) or a gap (the
		// agent stalled, the node slept): the chunk so far ends here, as
		// advise cuts gaps out.
		c := s.Flush()
		s.firstPerCPU(at)
		s.start(at, usage)
		return c
	}
	s.bucket(at, dt, du)
	s.addPerCPU(at)
	// Each interval in whole microseconds of the cumulative counters (not
	// of the interval itself), so that the rounding telescopes: the sum
	// over any run of intervals is the counters' own difference, whichever
	// samples lie between (a 100 ms interval of sampling by need and the
	// ten 10 ms ones it stands for give a period the same sum).
	s.deltas = binary.AppendUvarint(s.deltas, uint64(at/time.Microsecond-s.lastAt/time.Microsecond))
	s.deltas = binary.AppendUvarint(s.deltas, uint64(min(usage/time.Microsecond-s.lastUsage/time.Microsecond, math.MaxUint32)))
	s.n++
	if !s.counted {
		s.noteCores(dt, du)
	}
	s.lastAt, s.lastUsage = at, usage
	if at >= s.chunkEnd || (s.firstAt < s.startupUntil && at >= s.startupUntil) {
		c := s.Flush()
		s.start(at, usage)
		return c
	}
	return nil
}

// noteCores raises the parallelism bound with a use of du over dt
// (cfs.CoresBound: over two or more intervals, so that one late reading
// does not double it).
func (s *ContainerSummary) noteCores(dt, du time.Duration) {
	s.coresBound.Add(dt, du)
	s.cores = max(s.cores, s.coresBound.Cores())
}

// AddCounts takes one sample with the container's cumulative nr_throttled:
// its use goes through the backlog reconstruction (cfs.Backlog: the work
// of a throttling streak moved back to when it was asked for, as far as the
// counters allow) before Add. It returns the chunks completed, to be
// replayed and folded in (the slice is reused by the next call).
func (s *ContainerSummary) AddCounts(at, usage time.Duration, throttled uint64) []*Chunk {
	s.counted = true
	if s.rawHave && at > s.rawAt && usage >= s.rawUsage {
		s.noteCores(at-s.rawAt, usage-s.rawUsage)
	}
	s.rawHave, s.rawAt, s.rawUsage = true, at, usage
	clear(s.done) // the chunks are the caller's now: hold none of them
	s.done = s.done[:0]
	if s.backlog.Period == 0 {
		s.backlog.Period = s.cfg.Period
		s.emit = func(at, usage time.Duration) {
			if s.backlog.Moving() {
				s.arrivals = true
			}
			if c := s.Add(at, usage); c != nil {
				s.done = append(s.done, c)
			}
		}
	}
	s.backlog.Push(at, usage, throttled, s.emit)
	if s.backlog.Moved != s.movedSeen || s.backlog.Capped != s.cappedSeen {
		b := s.blockOf(at, at < s.startupUntil)
		b.Moved += s.backlog.Moved - s.movedSeen
		b.Capped += s.backlog.Capped - s.cappedSeen
		s.movedSeen, s.cappedSeen = s.backlog.Moved, s.backlog.Capped
	}
	return s.done
}

// Backlog is the reconstruction's account over the window: time moved and
// time capped.
func (s *ContainerSummary) Backlog() (moved, capped time.Duration) {
	for _, b := range s.blocks {
		moved, capped = moved+b.Moved, capped+b.Capped
	}
	return moved, capped
}

func (s *ContainerSummary) start(at, usage time.Duration) {
	s.have = true
	s.firstAt, s.firstUsage, s.lastAt, s.lastUsage = at, usage, at, usage
	s.chunkEnd = ((at-s.offset)/s.cfg.Chunk+1)*s.cfg.Chunk + s.offset
	s.deltas, s.n = s.deltas[:0], 0
	s.arrivals = false
	s.cpuDeltas, s.cpuRows = s.cpuDeltas[:0], 0
}

// Flush returns the open chunk (nil if it holds no interval) and starts the
// next one at its last sample.
func (s *ContainerSummary) Flush() *Chunk {
	n := s.n
	if n == 0 {
		return nil
	}
	// The replay's periods start at the first sample; an idle lead before it
	// moves them to this chunk's phase (the partition advise's phase ph
	// makes), counted from the chunk's own start, so that they fall on
	// the grid the agent samples on (SummaryConfig.OnGrid) also for a chunk
	// whose first sample is not at its start (a new container, a gap).
	lead := s.cfg.phaseBoundary(s.firstAt, s.offset)
	lead = ((s.firstAt-lead)%s.cfg.Period + s.cfg.Period) % s.cfg.Period
	// The chunk waits for the replay worker as compactly as it was kept.
	c := &Chunk{start: s.firstAt, n: n, lead: lead, cores: max(s.cores, 1), arrivals: s.arrivals, startup: s.firstAt < s.startupUntil,
		deltas: append([]byte(nil), s.deltas...)}
	if s.cpuRows == n && n > 0 {
		c.ncpu, c.cpuDeltas = len(s.lastCPU), append([]byte(nil), s.cpuDeltas...)
	}
	s.start(s.lastAt, s.lastUsage)
	return c
}

// OnGrid reports whether agent time t is an instant of the coarse grid of
// summaries whose chunks start at off (mod Chunk): a chunk's start, or a
// boundary of the periods the chunk holding t is replayed at (its phase,
// Flush). 100 ms samples at these instants give each replayed period its
// sum of demand (sampling by need: Agent, HotConfig).
func (c *SummaryConfig) OnGrid(t, off time.Duration) bool {
	rel := t - off
	if rel%c.Chunk == 0 {
		return true
	}
	return (t-c.phaseBoundary(t, off))%c.Period == 0
}

// phaseBoundary is a boundary of the replay's periods in the chunk holding
// agent time t (chunks start at off mod Chunk): chunk k is replayed at
// phase k mod Phases, its periods starting ph/Phases of a period after the
// chunk's start.
func (c *SummaryConfig) phaseBoundary(t, off time.Duration) time.Duration {
	k := int64((t - off) / c.Chunk)
	if t < off && (t-off)%c.Chunk != 0 {
		k-- // floor
	}
	n := int64(c.Phases)
	ph := (k%n + n) % n
	return off + time.Duration(k)*c.Chunk + c.Period*time.Duration(ph)/time.Duration(n)
}

// prefill is the work put in one period before a chunk's demand: it starts
// the period timer, so that the refill at the period's end fills the burst
// pool, as the kernel's would be after the idle time a burst usually
// follows. Without it every chunk would start with no burst saved (the
// replay starts a group from nothing), and a workload whose bursts a burst
// absorbs would look throttled once a chunk. The cost: one more burst's
// worth of runtime per chunk where the group was busy up to its end.
const prefill = time.Microsecond

// AddNow is Add, Replay and Fold in one step (tests, single-threaded use).
func (s *ContainerSummary) AddNow(at, usage time.Duration) {
	if c := s.Add(at, usage); c != nil {
		s.replayFold(c)
	}
}
