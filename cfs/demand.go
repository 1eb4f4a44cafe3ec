package cfs

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Demand is one group's CPU use as cumulative counters at sample times: the
// work the group asked for, replayed through the quota model. Samples carry
// their real timestamps; nothing assumes they are exactly 10 ms apart.
type Demand struct {
	// At is each sample's time since the first one (At[0] is 0), strictly
	// increasing; a View's At is its source's, read from the view's first
	// sample (the replay reads At[i] less that sample's time).
	At []time.Duration
	// Usage is the cumulative CPU time at each sample, non-decreasing.
	Usage []time.Duration
	// Cores bounds the demand's parallelism: work held back by throttling
	// catches up at most this many CPUs at once. 0: the samples' own bound
	// (CoresBound).
	Cores int
	// Excluded is the time left out of the replay (gaps in the samples).
	Excluded time.Duration
	// Warnings say what was dropped or doubted while reading the samples.
	Warnings []string
	// Arrivals marks usage that holds arrivals, not only use: work
	// Reconstruct moved to the start of a throttling streak arrives faster
	// than the group can run it, and the replay serves it on at most Cores
	// CPUs (use as sampled never outran the group's CPUs, and is served as
	// it came).
	Arrivals bool
	// Moved and Capped are Reconstruct's account when the samples were taken
	// under a limit that throttled: the time of the throttling streaks whose
	// work was moved to their start, and of those too long to move.
	Moved, Capped time.Duration
	// PerCPU, if not nil, is the group's cumulative CPU time on each CPU
	// at each sample (PerCPU[cpu][sample], aligned with At): how its use
	// split over the CPUs (the kernel's per-CPU counters). The replay then
	// hands runtime to each CPU in the kernel's 5 ms slices
	// (Periods.ReplaySlices), and Bound is the CPUs it ran on. Only each
	// interval's split is used; the total is Usage's.
	PerCPU [][]time.Duration
	// Scale, if not 0, scales the use where it is read: sample i's
	// cumulative use is Usage[0] + round((Usage[i]-Usage[0]) x Scale)
	// (UsageAt), so that one day of samples replayed with its use a few
	// percent lower and higher is held once, not three times (Scaled).
	// Code that reads Usage directly must go through UsageAt.
	Scale float64
	// origin is the time the replay takes At from (At[i]-origin): a
	// View's first sample's time in its source's At, 0 otherwise.
	origin time.Duration
	// maxSeen is the highest use over a sample of the samples before
	// Reconstruct moved work (MaxCores gives it then: moved work is not use).
	maxSeen float64
}

// MaxGap is the longest interval between two samples that is replayed; a
// longer one (a stopped sampler, a suspended machine) is a gap: its span is
// left out and the demand resumes after it.
const MaxGap = time.Second

// ErrTooShort marks samples spanning less than one period.
var ErrTooShort = errors.New("too few samples")

// Duration is the span the samples cover (without excluded gaps).
func (d *Demand) Duration() time.Duration {
	if len(d.At) == 0 {
		return 0
	}
	return d.At[len(d.At)-1] - d.At[0]
}

// Work is the CPU time used over the samples.
func (d *Demand) Work() time.Duration {
	if len(d.Usage) == 0 {
		return 0
	}
	return d.UsageAt(len(d.Usage)-1) - d.Usage[0]
}

// UsageAt is the cumulative CPU time at sample i, scaled by Scale when it
// is set.
func (d *Demand) UsageAt(i int) time.Duration {
	if d.Scale == 0 {
		return d.Usage[i]
	}
	return d.scaledUsageAt(i)
}

// scaledUsageAt is UsageAt with Scale set (out of line, so that UsageAt
// inlines into the replay's walk).
//
//go:noinline
func (d *Demand) scaledUsageAt(i int) time.Duration {
	return d.Usage[0] + time.Duration(math.Round(float64(d.Usage[i]-d.Usage[0])*d.Scale))
}

// du is the CPU time used between samples i-1 and i: the difference of the
// two (scaled) cumulative values, so that scaled use adds up exactly.
// It inlines into the replay's loops; a scaled demand's is scaledDu.
func (d *Demand) du(i int) time.Duration {
	if d.Scale == 0 {
		return d.Usage[i] - d.Usage[i-1]
	}
	return d.scaledDu(i)
}

// scaledDu is du with Scale set.
func (d *Demand) scaledDu(i int) time.Duration {
	u0, f := d.Usage[0], d.Scale
	return time.Duration(math.Round(float64(d.Usage[i]-u0)*f)) - time.Duration(math.Round(float64(d.Usage[i-1]-u0)*f))
}

// Scaled returns d with its use scaled by f (f > 0) where it is read
// (Scale), replayed as d is (Derive): d's samples are shared, not copied.
func (d *Demand) Scaled(f float64) *Demand {
	if d.Scale != 0 { // scale what d's replay reads, in a copy
		usage := make([]time.Duration, len(d.Usage))
		for k := range usage {
			usage[k] = d.UsageAt(k)
		}
		d = d.Derive(d.At, usage, 0)
	}
	o := d.Derive(d.At, d.Usage, 0)
	o.Scale = f
	return o
}

// View returns samples i to j-1 of d (a time block), replayed as d is
// (Derive) with its time from sample i on, as if At started at 0 there:
// d's samples are shared, not copied, so that the blocks of a day of
// samples are not held twice. The view is not scaled (Derive).
func (d *Demand) View(i, j int) *Demand {
	o := d.Derive(d.At[i:j], d.Usage[i:j], i)
	o.origin = d.At[i]
	return o
}

// at is sample i's time as the replay reads it: At[i] from the origin (a
// View's first sample; exact, so a view replays as a copy rebased to 0).
func (d *Demand) at(i int) time.Duration { return d.At[i] - d.origin }

// MeanCores is the mean use in cores.
func (d *Demand) MeanCores() float64 {
	if d.Duration() <= 0 {
		return 0
	}
	return float64(d.Work()) / float64(d.Duration())
}

// MaxCores is the highest use in cores over one sample interval of at least
// 5 ms (shorter ones read the counters' rounding, not the group); for a
// reconstructed demand, the highest use seen before the work was moved.
func (d *Demand) MaxCores() float64 {
	if d.maxSeen > 0 {
		return d.maxSeen
	}
	best := 0.0
	for i := 1; i < len(d.At); i++ {
		dt := d.At[i] - d.At[i-1]
		if dt >= 5*time.Millisecond {
			best = max(best, float64(d.du(i))/float64(dt))
		}
	}
	return best
}

// Bound returns the parallelism bound of the replay: Cores, or when it is
// 0 the samples' own bound (CoresBound over every interval).
func (d *Demand) Bound() float64 {
	if d.Cores > 0 {
		return float64(d.Cores)
	}
	if n := d.CPUsUsed(); n > 0 {
		return float64(n)
	}
	var b CoresBound
	for i := 1; i < len(d.At); i++ {
		b.Add(d.At[i]-d.At[i-1], d.du(i))
	}
	return float64(b.Cores())
}

// Pinned returns d with its parallelism bound fixed (from the samples,
// once, when Cores is 0), so that many replays of one demand do not each
// scan the samples for it.
func (d *Demand) Pinned() *Demand {
	if d.Cores > 0 {
		return d
	}
	c := *d
	c.Cores = int(d.Bound())
	return &c
}

// Derive returns other samples (a block of d, d's use scaled) replayed as
// d is: on d's parallelism bound, as arrivals when d's usage holds them,
// with d's per-CPU split from sample i on (at and usage start at d's
// sample i), at on d's time axis (a View's origin is kept). The result is
// not scaled: usage is its use as given, whatever d's Scale (Scaled keeps
// a scale).
func (d *Demand) Derive(at, usage []time.Duration, i int) *Demand {
	o := &Demand{At: at, Usage: usage, Cores: int(d.Bound()), Arrivals: d.Arrivals, origin: d.origin}
	if d.PerCPU != nil {
		o.PerCPU = make([][]time.Duration, len(d.PerCPU))
		for c, u := range d.PerCPU {
			o.PerCPU[c] = u[i : i+len(at)]
		}
	}
	return o
}

// CoresSpan is the shortest span over which use bounds a group's
// parallelism. A sample read late (the sampler preempted between its clock
// and the counter) makes one busy thread look like 1.1 to 1.5 cores over one
// 10 ms interval, and like two CPUs to a bound rounded up.
const CoresSpan = 15 * time.Millisecond

// coresSlack is the use above a whole number of CPUs that still counts as
// that number.
const coresSlack = 0.1

// CoresBound is the parallelism bound of a demand, fed one sample interval
// at a time: the highest use held over two overlapping windows, each window
// two or more consecutive intervals spanning at least CoresSpan, rounded up
// to whole CPUs after coresSlack. A late reading raises the window that ends
// at it and lowers the next by the same time, so no single reading, however
// late, raises the bound. A group parallel for less than about two windows
// (30 ms at 10 ms samples) is bounded low: its held-back work then catches
// up more slowly in the replay, which errs towards throttling. advise's
// replay and the agent's summaries use it alike.
type CoresBound struct {
	dt, du  [8]time.Duration
	n, next int
	prev    float64 // the use over the window ending at the previous interval; -1: none
	best    float64
}

// Add takes the next interval: dt long, du of CPU time used in it.
func (b *CoresBound) Add(dt, du time.Duration) {
	if b.n == 0 {
		b.prev = -1
	}
	b.dt[b.next], b.du[b.next] = dt, du
	b.next = (b.next + 1) % len(b.dt)
	b.n = min(b.n+1, len(b.dt))
	var span, work time.Duration
	for k := range b.n {
		i := (b.next - 1 - k + len(b.dt)) % len(b.dt)
		span, work = span+b.dt[i], work+b.du[i]
		if k >= 1 && span >= CoresSpan {
			use := float64(work) / float64(span)
			if b.prev >= 0 {
				b.best = max(b.best, min(use, b.prev))
			}
			b.prev = use
			return
		}
	}
}

// Cores is the bound: at least 1.
func (b *CoresBound) Cores() int {
	return max(1, int(b.best-coresSlack)+1)
}

// Check refuses demand that the replay cannot use: fewer than two samples,
// a span shorter than min, time or usage going backwards.
func (d *Demand) Check(minSpan time.Duration) error {
	if len(d.At) != len(d.Usage) {
		return fmt.Errorf("%d times but %d usage values", len(d.At), len(d.Usage))
	}
	for c, u := range d.PerCPU {
		if len(u) != len(d.At) {
			return fmt.Errorf("CPU %d: %d per-CPU values for %d samples", c, len(u), len(d.At))
		}
	}
	for i := 1; i < len(d.At); i++ {
		if d.At[i] <= d.At[i-1] {
			return fmt.Errorf("sample %d: time %d ns is not after the previous %d ns: samples must be in time order", i+1, d.At[i], d.At[i-1])
		}
		if d.Usage[i] >= d.Usage[i-1] && d.Scale >= 0 {
			continue // use that does not fall does not fall scaled by f >= 0
		}
		if u, prev := d.UsageAt(i), d.UsageAt(i-1); u < prev {
			return fmt.Errorf("sample %d: usage %d ns is below the previous %d ns: usage must be cumulative", i+1, u, prev)
		}
	}
	if len(d.At) < 2 || d.Duration() < minSpan {
		return fmt.Errorf("%w: the samples span %s, less than one period (%s): sample for longer", ErrTooShort, d.Duration(), minSpan)
	}
	return nil
}

// FromSamples makes a Demand from cumulative usage at times since any start:
// it shifts time to start at 0 and cuts gaps longer than MaxGap out (the
// demand continues after the gap as if none had been), and treats usage
// that falls (a restarted group or counter) as an interval without use,
// saying so in Warnings. It does not Check.
func FromSamples(at, usage []time.Duration) *Demand {
	return fromSamples(make([]time.Duration, len(at)), make([]time.Duration, len(at)), at, usage)
}

// FromSamplesInPlace is FromSamples on samples the caller gives up: the
// Demand's At and Usage are at and usage, rewritten, so that a day of
// samples (8.64 M) is held once, not twice.
func FromSamplesInPlace(at, usage []time.Duration) *Demand {
	return fromSamples(at, usage, at, usage)
}

// fromSamples is FromSamples writing into dat and dusage (len(at) long),
// which may be at and usage themselves: sample i is read before it is
// written, and what later samples need of it is kept aside.
func fromSamples(dat, dusage, at, usage []time.Duration) *Demand {
	d := &Demand{At: dat[:len(at)], Usage: dusage[:len(at)]}
	var shift, ushift, at0, prevAt, prevUsage time.Duration
	for i := range at {
		t, u := at[i], usage[i]
		if i == 0 {
			at0 = t
		}
		if i > 0 && t-prevAt > MaxGap && u >= prevUsage {
			gap := t - prevAt
			d.Warnings = append(d.Warnings, fmt.Sprintf("samples %d-%d: %s without samples; that span (%s of CPU) is left out", i, i+1, gap.Round(time.Millisecond), (u-prevUsage).Round(time.Millisecond)))
			shift += gap - 10*time.Millisecond
			ushift += u - prevUsage
			d.Excluded += gap
		}
		if i > 0 && u < prevUsage {
			d.Warnings = append(d.Warnings, fmt.Sprintf("sample %d at %s: usage fell from %s to %s (a restarted group or counter): that interval is left out and the demand continues from the new counter",
				i+1, (t-at0).Round(time.Millisecond), prevUsage, u))
			ushift += u - prevUsage
			d.Excluded += t - prevAt
		}
		d.At[i] = t - at0 - shift
		d.Usage[i] = u - ushift
		prevAt, prevUsage = t, u
	}
	return d
}
