package agent

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cfs"
)

// SummaryConfig shapes every container's summary.
type SummaryConfig struct {
	// Window is how far back the summary reaches (default 24 h).
	Window time.Duration
	// Block is the unit the window is kept in and dropped by (default 1 h):
	// each block keeps its own evaluations, so advice can be given per
	// block (how much blocks disagree) as well as over the window.
	Block time.Duration
	// Chunk is how long raw samples are kept before they are replayed
	// through the quota model and dropped (default 1 min).
	Chunk time.Duration
	// Ladder is the limits evaluated (millicores), each without burst and
	// with a burst equal to the limit (default Ladder(MaxMilli)).
	Ladder []int64
	// Period is the CFS period evaluated (default 100 ms).
	Period time.Duration
	// Phases of the period (default 10, as advise): each chunk is replayed
	// at one of them, in turn (chunk k at phase k mod Phases), so that the
	// window covers them all at a tenth of the cost of replaying every
	// chunk at every phase.
	Phases int
	// Bucket is the resolution of the usage kept for krr's and the VPA's
	// rules (default 15 s).
	Bucket time.Duration
}

func (c *SummaryConfig) defaults(maxMilli int64) {
	if c.Window <= 0 {
		c.Window = 24 * time.Hour
	}
	if c.Block <= 0 {
		c.Block = time.Hour
	}
	if c.Chunk <= 0 {
		c.Chunk = time.Minute
	}
	if c.Period <= 0 {
		c.Period = 100 * time.Millisecond
	}
	if c.Phases <= 0 {
		c.Phases = 10
	}
	if c.Bucket <= 0 {
		c.Bucket = 15 * time.Second
	}
	if len(c.Ladder) == 0 {
		c.Ladder = Ladder(maxMilli)
	}
}

// Check refuses a configuration the summary cannot keep.
func (c *SummaryConfig) Check() error {
	switch {
	case c.Chunk < 10*c.Period:
		return fmt.Errorf("chunk %s: give at least 10 periods (%s)", c.Chunk, 10*c.Period)
	case c.Block < c.Chunk || c.Block%c.Chunk != 0:
		return fmt.Errorf("block %s: give a multiple of the chunk (%s)", c.Block, c.Chunk)
	case c.Window < c.Block || c.Window%c.Block != 0:
		return fmt.Errorf("window %s: give a multiple of the block (%s)", c.Window, c.Block)
	case c.Bucket <= 0 || time.Minute%c.Bucket != 0:
		return fmt.Errorf("bucket %s: give a divisor of one minute", c.Bucket)
	}
	return nil
}

// Block is the summary of one stretch of the window: its demand and, per
// evaluated point, what the quota model says.
type Block struct {
	// Start is the agent time of its first chunk.
	Start time.Duration
	// Span is the time replayed, Work the CPU time used over it (ns).
	Span    time.Duration
	Work    float64
	Samples int
	// Periods is nr_periods (mean over the phases), the same for every point.
	Periods float64
	// MaxCores is the highest use over one sample interval.
	MaxCores float64
	// CPUs is the most CPUs the container ran on over one chunk, and
	// CPUsAtOnce within one sample interval, from the per-CPU counters
	// (ContainerSummary.NotePerCPU); SplitChunks is how many of the
	// block's chunks carried the split (each replayed with the kernel's
	// per-CPU slices where it spans two CPUs or more). 0 without them.
	CPUs, CPUsAtOnce, SplitChunks int
	// Throttled is the container's own nr_throttled over the block (the
	// demand above its limit was not seen: the advice is a lower bound).
	Throttled uint64
	// Moved and Capped are the reconstruction's account over the block
	// (cfs.Backlog): the time of the throttling streaks whose work was
	// moved to their start, and of those too long to move.
	Moved, Capped time.Duration
	// Points are the evaluated points that were throttled or delayed, by
	// Key; a point missing here was never throttled in the block.
	Points []PointAcc
}

// PointAcc is one point's counts in one block.
type PointAcc struct {
	Key                                 int32
	Throttled, ThrottledSeconds, Bursts float32
	// ExtraPeriods is the periods this point counted over the block's
	// (Block.Periods): a limit that throttles keeps the period timer
	// running through its backlog, where the group alone would have gone
	// idle, as nr_periods does.
	ExtraPeriods float32
	Delay        packedKnots
}

// NoteThrottled adds the container's own nr_throttled, counted up to agent
// time at, to the block holding at.
func (s *ContainerSummary) NoteThrottled(at time.Duration, throttled uint64) {
	if throttled > 0 {
		s.blockOf(at, at < s.startupUntil).Throttled += throttled
	}
}

func (b *Block) point(k int32) *PointAcc {
	i := sort.Search(len(b.Points), func(i int) bool { return b.Points[i].Key >= k })
	if i < len(b.Points) && b.Points[i].Key == k {
		return &b.Points[i]
	}
	b.Points = append(b.Points, PointAcc{})
	copy(b.Points[i+1:], b.Points[i:])
	b.Points[i] = PointAcc{Key: k}
	return &b.Points[i]
}

func (b *Block) find(k int32) *PointAcc {
	i := sort.Search(len(b.Points), func(i int) bool { return b.Points[i].Key >= k })
	if i < len(b.Points) && b.Points[i].Key == k {
		return &b.Points[i]
	}
	return nil
}

func key(i int, burst bool) int32 {
	k := int32(i) * 2
	if burst {
		k++
	}
	return k
}

// ContainerSummary is one container's demand over the rolling window, kept as
// blocks of evaluations on the ladder; only the open chunk's raw samples
// are held.
type ContainerSummary struct {
	cfg *SummaryConfig
	// open chunk: the first sample (the previous chunk's last) and, for
	// each sample after it, the time and usage since the one before (in us,
	// as two uvarints: 3-4 bytes a sample where two uint32 took 8).
	have       bool
	firstAt    time.Duration
	firstUsage time.Duration
	chunkEnd   time.Duration
	deltas     []byte
	n          int // samples in deltas
	lastAt     time.Duration
	lastUsage  time.Duration

	blocks []*Block // oldest first; the last is open

	// usage per Bucket, for krr's and the VPA's rules: work (ns) and time
	// covered (ns), a ring aligned on agent time.
	bucketWork, bucketTime []float32
	lastBucket             int64 // the last bucket written: (at-1)/Bucket

	cores int // parallelism bound: highest use seen, rounded up
	err   error
	// offset staggers this summary's chunk boundaries (SetOffset).
	offset time.Duration

	closed map[int32]*aggPoint // the closed blocks' aggregate; nil: recompute

	// The per-CPU split of the open chunk (NotePerCPU): readings waiting
	// for their sample (the backlog may hand samples on later), the
	// reading at the last sample (nil: none), and, while every sample of
	// the chunk had one (split), each interval's per-CPU use (us, one
	// uvarint per CPU).
	pending      []perCPUReading
	spare        [][]uint64 // the slices of readings taken, for reuse
	lastCPU, cur []uint64   // the last reading; this sample's
	cpuRows      int        // rows in cpuDeltas (0: no reading in the chunk yet)
	cpuDeltas    []byte

	// AddCounts: the reconstruction before Add, the raw use for the
	// parallelism bound (moved work would inflate it), the chunks done.
	backlog          cfs.Backlog
	counted, rawHave bool
	rawAt, rawUsage  time.Duration
	coresBound       cfs.CoresBound
	// movedSeen and cappedSeen are the backlog's totals already put in
	// blocks.
	movedSeen, cappedSeen time.Duration
	// arrivals is set when work the backlog moved went into the open
	// chunk: the chunk replays it as arrivals.
	arrivals bool
	emit     func(at, usage time.Duration)
	done     []*Chunk

	// startupUntil ends the container's start-up (SetStartup): the chunks
	// before it fold into startup, not into the window's blocks.
	startupUntil time.Duration
	startup      *Block
}

// SetStartup makes the demand before agent time until the container's
// start-up: kept apart from the window's blocks (and so from the advice),
// in a block of its own (Startup). The agent sets it for a container that
// appeared after it started: a start-up (a runtime's initialisation, a
// cache warming, a JIT) asks once for CPU the steady state does not, and a
// window's worst block would otherwise make the limit of that minute.
func (s *ContainerSummary) SetStartup(until time.Duration) { s.startupUntil = until }

// Startup is the start-up's block (nil when there was none, or it left
// the window).
func (s *ContainerSummary) Startup() *Block { return s.startup }

// NewSummary returns an empty summary; cfg is shared by every container and
// must not change.
func NewSummary(cfg *SummaryConfig) *ContainerSummary {
	n := int(cfg.Window / cfg.Bucket)
	return &ContainerSummary{cfg: cfg, bucketWork: make([]float32, n), bucketTime: make([]float32, n)}
}

// SetOffset moves the summary's chunk boundaries by off (less than a
// chunk): the agent spreads its containers' chunks over the minute, so that
// their replays (and the memory they queue) do not all come at once.
func (s *ContainerSummary) SetOffset(off time.Duration) {
	s.offset = off % s.cfg.Chunk
}

// perCPUReading is a container's cumulative CPU time on each CPU (ns) at
// agent time at.
type perCPUReading struct {
	at  time.Duration
	cum []uint64
}

// maxPending bounds the per-CPU readings kept for samples not added yet.
const maxPending = 256

// NotePerCPU records the container's cumulative CPU time on each CPU
// (cgroup.PerCPUReader) at agent time at, the time of a sample given to
// AddCounts or Add (before it is added). A chunk with readings is replayed
// with the kernel's per-CPU runtime slices over their split
// (cfs.Demand.PerCPU); its intervals without one take the chunk's split.
func (s *ContainerSummary) NotePerCPU(at time.Duration, cum []uint64) {
	if len(s.pending) >= maxPending {
		s.spare = append(s.spare, s.pending[0].cum)
		s.pending = append(s.pending[:0], s.pending[1:]...)
	}
	var buf []uint64
	if n := len(s.spare); n > 0 {
		buf, s.spare = s.spare[n-1][:0], s.spare[:n-1]
	}
	s.pending = append(s.pending, perCPUReading{at: at, cum: append(buf, cum...)})
}

// takePerCPU copies the per-CPU reading of the sample at agent time at
// into cur (empty if there is none), dropping older readings.
func (s *ContainerSummary) takePerCPU(at time.Duration) {
	s.cur = s.cur[:0]
	i := 0
	for ; i < len(s.pending) && s.pending[i].at <= at; i++ {
		if s.pending[i].at == at {
			s.cur = append(s.cur, s.pending[i].cum...)
		}
		s.spare = append(s.spare, s.pending[i].cum)
	}
	if i > 0 {
		n := copy(s.pending, s.pending[i:])
		clear(s.pending[n:])
		s.pending = s.pending[:n]
	}
}

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

// addPerCPU appends the per-CPU use of the interval ending at agent time
// at to the open chunk's split: a row of one uvarint (us) per CPU, the use
// on each CPU since the last reading (maybe samples before: a row holds
// only a split, cfs.Demand.Split takes its shares), or zeros where at has
// no reading (such an interval takes the chunk's split). Rows start at the
// chunk's first reading, with zero rows for the samples before it.
func (s *ContainerSummary) addPerCPU(at time.Duration) {
	s.takePerCPU(at)
	if len(s.cur) == 0 {
		if s.cpuRows > 0 {
			s.cpuDeltas = appendZeros(s.cpuDeltas, len(s.lastCPU))
			s.cpuRows++
		}
		return
	}
	if len(s.cur) != len(s.lastCPU) { // the first reading, or the CPUs changed
		s.lastCPU = append(s.lastCPU[:0], s.cur...)
		s.cpuDeltas, s.cpuRows = s.cpuDeltas[:0], 0
	}
	for s.cpuRows < s.n { // the samples before: no split
		s.cpuDeltas = appendZeros(s.cpuDeltas, len(s.cur))
		s.cpuRows++
	}
	for c, v := range s.cur {
		d := v - min(v, s.lastCPU[c]) // a counter that fell: nothing
		s.cpuDeltas = binary.AppendUvarint(s.cpuDeltas, d/1000)
	}
	s.cpuRows++
	s.lastCPU = append(s.lastCPU[:0], s.cur...)
}

// firstPerCPU takes the reading of a chunk's first sample (at), which
// starts the next interval's deltas.
func (s *ContainerSummary) firstPerCPU(at time.Duration) {
	s.takePerCPU(at)
	if len(s.cur) > 0 {
		s.lastCPU = append(s.lastCPU[:0], s.cur...)
	}
}

func appendZeros(b []byte, n int) []byte {
	for range n {
		b = append(b, 0)
	}
	return b
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

// demand expands a chunk for the replay: one period of prefill, the phase
// lead, then the samples. An interval longer than one and a half fine
// steps (Period/Phases: a coarse sample of sampling by need, or a late
// one) that lies within one of the replay's periods has its work
// front-loaded: in fine steps from its start, each at most the chunk's
// parallelism bound (cores: the CPUs the replay lets waiting work catch up
// on), the rest of the interval idle; work beyond the bound over the whole
// interval goes into its last step. maxCores is the highest use over one
// interval as sampled (advise.Demand.MaxCores' rule), before the expansion.
//
// Why the delays are an upper bound of those of fine samples that keep
// within the bound. The replay serves work in arrival order, on at most
// cores CPUs while work waits and as it arrives otherwise, and not at all
// while the pool is dry. Take any spread of the interval's work over its
// fine steps, none above cores CPUs.
//   - The period's sum is the same (Add keeps the counters' own
//     microseconds), and work arriving no faster than the service runs
//     leaves the service of a period the same whichever its spread: how
//     much is served, whether the pool runs dry (the period throttles) and
//     what carries over (backlog, burst pool) depend only on the sum and
//     what came in. Every period replays alike, this one and those after.
//   - So the pool runs dry at the same unit of work, and a unit x is
//     served at max over the units y up to it of arrival(y) + (x-y)/cores,
//     plus the wait for the refill where the pool ran dry between them.
//     Its delay, that minus arrival(x), is largest when arrival(x) -
//     arrival(y) is smallest: (x-y)/cores for y in the interval, which only
//     front-loading at cores reaches, and arrival(x) earliest for y
//     before it. Each unit waits at least as long as under any spread, so
//     every quantile of the delays is at least as high.
//
// Front-loading faster than cores (the node's CPUs, as before) would let
// the replay serve that work faster than the group can run, which shortens
// the waits of the work behind it and changes what carries over. Fine
// samples above the bound (late readings) keep within it in the replay too:
// their excess arrives after them, within their period (cfs's lateReading),
// but at a period's last sample, whose reading the grid's shares. And the
// replay splits a sample where the pool runs dry, so that no delay stands
// for work on both sides of a wait for the refill. docs/fleet.md measures
// what is left.
func (c *Chunk) demand(cfg *SummaryConfig) (d *advise.Demand, maxCores float64) {
	period := cfg.Period
	fine := period / time.Duration(cfg.Phases)
	step := time.Duration(c.cores) * fine
	n := c.n
	at, usage := make([]time.Duration, 0, n+3), make([]time.Duration, 0, n+3)
	at, usage = append(at, 0, period), append(usage, 0, prefill)
	if c.lead > 0 {
		at, usage = append(at, period+c.lead), append(usage, prefill)
	}
	// The per-CPU split, aligned with at: nothing on any CPU over the
	// prefill and the lead (such an interval takes the chunk's split,
	// cfs.Demand.Split) and over a front-loaded interval's fine steps but
	// its last, which has the interval's whole split.
	var perCPU [][]time.Duration
	if c.ncpu > 0 {
		perCPU = make([][]time.Duration, c.ncpu)
		for k := range perCPU {
			perCPU[k] = make([]time.Duration, len(at), n+len(at))
		}
	}
	cb := c.cpuDeltas
	var a, u time.Duration
	for b := c.deltas; len(b) > 0; {
		dt, k := binary.Uvarint(b)
		du, l := binary.Uvarint(b[k:])
		b = b[k+l:]
		t0, u0 := period+c.lead+a, prefill+u
		a += time.Duration(dt) * time.Microsecond
		u += time.Duration(du) * time.Microsecond
		t1 := period + c.lead + a
		if d := t1 - t0; d >= 5*time.Millisecond {
			maxCores = max(maxCores, float64(u-(u0-prefill))/float64(d))
		}
		if t1-t0 > fine*3/2 && du > 0 && t0/period == (t1-1)/period {
			for t, rest := t0, prefill+u-u0; rest > 0 && t+fine < t1; {
				w := min(rest, step)
				t, u0, rest = t+fine, u0+w, rest-w
				at, usage = append(at, t), append(usage, u0)
				for k, p := range perCPU {
					perCPU[k] = append(p, p[len(p)-1])
				}
			}
		}
		at, usage = append(at, t1), append(usage, prefill+u)
		for k, p := range perCPU {
			v, l := binary.Uvarint(cb)
			cb = cb[l:]
			perCPU[k] = append(p, p[len(p)-1]+time.Duration(v)*time.Microsecond)
		}
	}
	return &advise.Demand{At: at, Usage: usage, Cores: c.cores, Arrivals: c.arrivals, PerCPU: perCPU}, maxCores
}

// Replayed is a chunk's evaluations, ready to fold into its summary.
type Replayed struct {
	start    time.Duration
	startup  bool
	span     time.Duration
	work     float64
	n        int
	periods  float64
	maxCores float64
	// cpus and atOnce are the CPUs the chunk ran on and the most within
	// one interval; split, whether it carried a per-CPU split.
	cpus, atOnce int
	split        bool
	keys         []int32
	evs          []advise.Evaluation
	knots        []delayKnots
}

// Replay runs a chunk through the quota model at every ladder limit up to
// the first that covers the chunk's highest use (every limit above it is as
// unthrottled as that one), each without burst and with a burst equal to
// it. It is the costly step and touches no summary: run it anywhere.
func (cfg *SummaryConfig) Replay(c *Chunk) (*Replayed, error) {
	d, maxCores := c.demand(cfg)
	lead := cfg.Period + c.lead
	if d.Duration()-lead < cfg.Period {
		return nil, nil // too short to replay: a container that just went
	}
	var points []advise.Point
	var idx []int32
	for i, l := range cfg.Ladder {
		p := advise.Point{LimitMilli: l, Period: cfg.Period}
		if p.Check() != nil {
			continue
		}
		points = append(points, p, advise.Point{LimitMilli: l, BurstMilli: l, Period: cfg.Period})
		idx = append(idx, key(i, false), key(i, true))
		if float64(l) >= maxCores*1000 {
			break
		}
	}
	zero, qs := make([]float64, len(points)), make([][]float64, len(points))
	evs, err := advise.Evaluate(d, points, advise.Options{Phases: 1, Workers: 1, Delays: func(i int, h *cfs.DelayHist) {
		zero[i] = h.ZeroShare()
		v := make([]float64, len(delayQs))
		for j, q := range delayQs {
			v[j] = h.Quantile(q) / 1e6
		}
		qs[i] = v
	}})
	if err != nil {
		return nil, err
	}
	r := &Replayed{start: c.start, startup: c.startup, span: d.Duration() - lead, work: float64(d.Work() - prefill), n: c.n, maxCores: maxCores}
	if d.PerCPU != nil {
		r.cpus, r.atOnce, r.split = d.CPUsUsed(), d.CPUsAtOnce(), true
	}
	if len(evs) > 0 {
		// The periods the group was active in on its own: the least
		// throttled point's (the last), without the prefill's period.
		r.periods = evs[len(evs)-1].Periods - 1
	}
	for i, e := range evs {
		if e.ThrottledPeriods == 0 && e.DelayMaxMs == 0 {
			continue
		}
		r.keys = append(r.keys, idx[i])
		r.evs = append(r.evs, e)
		r.knots = append(r.knots, knotsOf(zero[i], qs[i], e.DelayMaxMs))
	}
	return r, nil
}

// Fold adds a replayed chunk to its block.
func (s *ContainerSummary) Fold(r *Replayed) {
	if r == nil {
		return
	}
	b := s.blockOf(r.start, r.startup)
	for i, e := range r.evs {
		a := b.point(r.keys[i])
		old := a.Delay.unpack()
		if a.Throttled == 0 && a.Bursts == 0 && old.Max == 0 {
			old = delayKnots{Zero: 1} // new here: no delay in the block before
		}
		a.Delay = mergeDelay([]weighted{{old, b.Work}, {r.knots[i], r.work}}).pack()
		a.Throttled += float32(e.ThrottledPeriods)
		a.ThrottledSeconds += float32(e.ThrottledSeconds)
		a.Bursts += float32(e.Bursts)
		a.ExtraPeriods += float32(max(e.Periods-1-r.periods, 0))
	}
	b.Periods += r.periods
	b.Span += r.span
	b.Work += r.work
	b.Samples += r.n
	b.MaxCores = max(b.MaxCores, r.maxCores)
	if r.split {
		b.CPUs, b.CPUsAtOnce = max(b.CPUs, r.cpus), max(b.CPUsAtOnce, r.atOnce)
		b.SplitChunks++
	}
}

// AddNow is Add, Replay and Fold in one step (tests, single-threaded use).
func (s *ContainerSummary) AddNow(at, usage time.Duration) {
	if c := s.Add(at, usage); c != nil {
		s.replayFold(c)
	}
}

func (s *ContainerSummary) replayFold(c *Chunk) {
	if c == nil {
		return // Flush had no open chunk
	}
	r, err := s.cfg.Replay(c)
	if err != nil {
		s.err = err
		return
	}
	s.Fold(r)
}

// blockOf is blockAt, or the start-up's block for a chunk of the start-up.
func (s *ContainerSummary) blockOf(t time.Duration, startup bool) *Block {
	if !startup {
		return s.blockAt(t)
	}
	if s.startup == nil {
		s.startup = &Block{Start: t}
	}
	return s.startup
}

// blockAt returns the open block for a chunk starting at t, opening a new
// one (and dropping those that left the window) when t is past it.
func (s *ContainerSummary) blockAt(t time.Duration) *Block {
	start := t / s.cfg.Block * s.cfg.Block
	n := len(s.blocks)
	if n > 0 && s.blocks[n-1].Start == start {
		return s.blocks[n-1]
	}
	s.closed = nil
	i := sort.Search(n, func(i int) bool { return s.blocks[i].Start >= start })
	if i < n && s.blocks[i].Start == start {
		return s.blocks[i] // a chunk replayed late: its block is closed
	}
	if n > 0 && i == n {
		// The open block closes: its points, grown by appends, are kept
		// at their size from now on (a day of them is most of a summary).
		last := s.blocks[n-1]
		last.Points = append([]PointAcc(nil), last.Points...)
	}
	b := &Block{Start: start}
	s.blocks = append(s.blocks, nil)
	copy(s.blocks[i+1:], s.blocks[i:])
	s.blocks[i] = b
	s.expire(s.blocks[len(s.blocks)-1].Start)
	return b
}

// expire drops the blocks that ended more than a window before now.
func (s *ContainerSummary) expire(now time.Duration) {
	i := 0
	for i < len(s.blocks) && s.blocks[i].Start+s.cfg.Block <= now-s.cfg.Window {
		i++
	}
	if i > 0 {
		s.blocks = append(s.blocks[:0], s.blocks[i:]...)
	}
	if s.startup != nil && s.startupUntil <= now-s.cfg.Window {
		s.startup = nil
	}
}

// Blocks returns the blocks in the window, oldest first (not to be changed).
func (s *ContainerSummary) Blocks() []*Block { return s.blocks }

// Err is the last error the replay gave (nil normally).
func (s *ContainerSummary) Err() error { return s.err }

// bucket adds dt of time and du of work, ending at at, to the usage ring.
func (s *ContainerSummary) bucket(at, dt, du time.Duration) {
	n := int64(len(s.bucketWork))
	m := int64((at - 1) / s.cfg.Bucket)
	if m > s.lastBucket {
		// clear the slots the ring reaches again
		for j := max(s.lastBucket+1, m-n+1); j <= m; j++ {
			s.bucketWork[j%n], s.bucketTime[j%n] = 0, 0
		}
		s.lastBucket = m
	} else if m <= s.lastBucket-n {
		return
	}
	s.bucketWork[m%n] += float32(du)
	s.bucketTime[m%n] += float32(dt)
}
