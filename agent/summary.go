package agent

import (
	"fmt"
	"sort"
	"time"

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
	sd           startupDemand // the start-up's demand, for its boost (startup.go)
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
		s.startup, s.sd = nil, startupDemand{}
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
