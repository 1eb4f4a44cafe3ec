package watch

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
)

// Options configure a Watcher.
type Options struct {
	// Root is prepended to every kernel path ("/" on the host; a fake tree
	// in tests; the host's root mounted in a container).
	Root string
	// SampleEvery is the sampling interval for usage and nr_periods: 10 ms
	// by default, at least 1 ms.
	SampleEvery time.Duration
	// Window is the sliding window for the peak of groups without a quota:
	// 100 ms by default.
	Window time.Duration
	// Mapping is how the runtime turned shares into a v2 weight, for reading
	// requests back: cgroup.WeightLinear by default.
	Mapping cgroup.WeightMapping
	// ByNeed is sampling by need, the agent's: the zero value reads every
	// group at every sample (top does).
	ByNeed ByNeed
	// Open opens the groups' counter files for repeated reading (nil:
	// cgroup.OpenCounterFile); tests wrap it to fail reads.
	Open cgroup.OpenFunc
}

// ByNeed configures sampling by need: which groups are read at every
// sample and how often, as a caller's Policy decides, and which of their
// files are read at a sample.
type ByNeed struct {
	// Policy, if set, picks the groups read at every sample and is given
	// every group's readings (Policy).
	Policy Policy
	// Coarse thins the sampling of the groups Policy picks: at an instant
	// (a multiple of SampleEvery since the start) such a group is read only
	// when Policy.OnGrid says the instant is on the coarse grid, or the
	// group is hot (Policy.Observe); Run sleeps through the instants at
	// which nothing is to be read. Off reads them at every instant. It
	// needs a Policy.
	Coarse bool
	// SettingsEvery, if set, reads the settings (quota, period, burst,
	// shares or weight) and process count of a group that is not hot at the
	// first report at least this long after the last read, and carries the
	// last values at the reports between; a hot group's are read at every
	// report. 0 reads them at every report (top does; the agent, with
	// sampling by need, reads cold containers' once a minute: most of its
	// idle cost was opening those files).
	SettingsEvery time.Duration
	// PerCPU reads a hot group's per-CPU split (cgroup.PerCPUReader) at
	// each of its samples, for Policy.Observe (Sample.PerCPU). On v1 the
	// split is cpuacct.usage_percpu, whose sum is cpuacct.usage: it is read
	// in the usage's place, one pread for both. A group whose reader cannot
	// be opened goes without (not tried again), and so does a group of more
	// than SplitMaxThreads threads on v2; a read that fails is tried again
	// at the next hot sample (counted in ReadErrors), up to splitTries in a
	// row.
	PerCPU bool
	// Stat, on v1 (where cpu.stat is a file of its own beside
	// cpuacct.usage), reads a limited group's cpu.stat at a sample only
	// when nr_throttled can have moved since its last sample: when its use
	// since a period before that sample could have reached its quota less
	// cgroup.ThrottleSlack, or while it was throttled within the last
	// period (statDue has the rule and why it misses no move). Its
	// nr_throttled at every sample is what a read would give; nr_periods
	// and the throttled time are carried between reads, and read at every
	// report, so the report's counters stay exact; a group's peak within a
	// period is then over sliding windows (BasisWindow) where a sample of
	// its interval carried them. Off where the slack cannot be read.
	Stat bool
}

// Policy is sampling by need as its caller decides it (the agent
// implements it): which groups to read at every sample, which instants are
// on the coarse grid, and, from each reading, which groups are hot.
type Policy interface {
	// Picks says, at each Discover, whether a group is read at every
	// sample; the others are read at their first sample (Observe sees them
	// appear) and then only at each Report: their rows have the interval's
	// totals and means, and no peak within a period, settings, pressure or
	// process count.
	Picks(Identity) bool
	// OnGrid says whether the instant at (since the watcher started) is on
	// the coarse grid (ByNeed.Coarse).
	OnGrid(at time.Duration) bool
	// Observe is given every group's reading at each of its samples (the
	// agent keeps its demand from them). What it returns says whether the
	// group is hot (ByNeed.Coarse): read at every instant until a later
	// call says otherwise.
	Observe(Sample) (hot bool)
}

// PodPolicy is a Policy that also picks pod groups by their quota: at each
// Discover, and in Run after each report, a pod group Picks leaves out is
// read at every sample where PicksPod says so, given its cgroup path and
// its quota in cores (0: none).
// The agent picks the pods with a pod-level limit this way; a pod without
// one costs one settings read per report, nothing per sample.
type PodPolicy interface {
	Policy
	PicksPod(id Identity, path string, limitCores float64) bool
}

// GroupID identifies a group while a Watcher has it open: the same at
// each of its samples, never given to another group by the same Watcher.
// A group opened again (its directories changed, or it was made again
// under its path) gets a new one.
type GroupID uint64

// Sample is one group's reading at one sampling instant (Policy.Observe).
type Sample struct {
	ID       GroupID
	Path     string
	Identity Identity
	// At is the time since the watcher started.
	At time.Duration
	// UsageNs is the group's cumulative usage, ThrottledPeriods its
	// nr_throttled.
	UsageNs, ThrottledPeriods uint64
	// PerCPU is the group's per-CPU split (ByNeed.PerCPU; nil where none
	// was read), valid until Observe returns.
	PerCPU []uint64
}

// SplitMaxThreads is the most threads a cgroup v2 group may have for its
// per-CPU split to be read (ByNeed.PerCPU): v2 has no per-CPU usage file,
// and cgroup.PerCPUReader reads one or two files a thread (as advise, which
// takes the same bound).
const SplitMaxThreads = 32

func (o *Options) defaults() {
	if o.Root == "" {
		o.Root = "/"
	}
	if o.SampleEvery == 0 {
		o.SampleEvery = 10 * time.Millisecond
	}
	if o.Window == 0 {
		o.Window = 100 * time.Millisecond
	}
	if o.Mapping == "" {
		o.Mapping = cgroup.WeightLinear
	}
}

// Watcher samples every cgroup of a host: usage and nr_periods every
// SampleEvery, settings, pressure and processes once per interval. It is not
// safe for concurrent use (but for SetNames); Run drives it from one
// goroutine.
type Watcher struct {
	opts Options
	src  *Source
	pods *PodNames
	// names from another source than the log directories (SetNames), and
	// whether they changed since the groups were last named.
	extraMu      sync.Mutex
	extra        *PodNames
	extraChanged bool
	groups       map[string]*group
	sorted       []*group        // by path
	open         cgroup.OpenFunc // tests fail it
	// events tells Run of directories made (nil: none to be had), and
	// rediscover that groups may have appeared since the last Discover.
	events     *dirEvents
	eventsErr  error // why there are none
	rediscover bool
	// taken counts the samples; clock is Run's (its count of instants
	// skipped is SampleCounts' missed); lastAt is the last sample's time;
	// hot, whether a group the Policy picks was hot at it (ByNeed.Coarse).
	taken  atomic.Int64
	clock  atomic.Pointer[cgroup.Clock]
	lastAt time.Duration
	hot    bool
	// hotList holds the groups hot after the last Sample, in path order
	// (hotListOK: since the last Discover), the only ones read off the
	// coarse grid.
	hotList   []*group
	hotListOK bool
	// newWait, if set, makes Run's waits in place of waiter (a benchmark's
	// reference: bench_run_test.go).
	newWait func(ctx context.Context, clock *cgroup.Clock) func() (time.Duration, bool)
	// nextID is the GroupID the next group opened gets.
	nextID GroupID
	// cpus bounds the CPUs a group's stall is spread over (SplitStall).
	cpus int
	// slack is cgroup.ThrottleSlack on this host with ByNeed.Stat
	// (0: off); missed counts the moves of nr_throttled a report found
	// that statDue had said could not happen (then the group's cpu.stat
	// is read at every sample).
	slack  time.Duration
	missed atomic.Int64
	// readErrors counts the reads of a group's counters that failed while
	// the group was still there (ReadErrors).
	readErrors atomic.Int64
	// gates count the usage of the lowest group that holds every group
	// the Policy picks under each top-level group (kubepods, throttlelab: a
	// gate above both would be the root, which always moves); none without
	// ByNeed.Coarse. See Sample.
	gates []*gate
	// byCPUDir finds a group by its cpu directory (settingsWritten).
	byCPUDir map[string]*group
}

// gate is the usage of one group above groups the Policy picks (Sample).
type gate struct {
	dir     string
	counter *cgroup.UsageCounter
	usage   uint64 // at the current grid instant
	ok      bool   // read at it
}

// group is one watched cgroup.
type group struct {
	ref      Ref
	gid      GroupID
	id       Identity
	counters *cgroup.UsageCounter // nil when it could not be opened (err says why)
	// err is why the group cannot be read (shown in its row): its
	// counters could not be opened (tried again at the next Discover), or
	// its last read failed while its directory was still there (a
	// transient error: EBUSY, a short read; read again at its next sample,
	// and cleared by the first that works).
	err  error
	gone bool // removed: dropped at the next Discover, never shown

	first, last sample // at the interval's start and now
	samples     int    // since first
	// On v1 its cpu.stat is a file of its own, read at a sample only while
	// it is limited and its counters move (read): without a quota the
	// bandwidth counters do not move, and the last ones read are carried
	// on (statRead is set once they were).
	statRead bool
	// period is the group's CFS period while it has a quota (0 without);
	// active the time of the last sample at which its usage or its
	// cpu.stat moved (see read).
	period, active time.Duration
	// every: read at every sample (Policy.Picks), else at reports; hot:
	// read at every instant, not only on the coarse grid (ByNeed.Coarse).
	every, hot bool
	tracker    *cgroup.PeakTracker
	pressure   *Pressure // at the interval's start
	// psiDir holds the group's cpu.pressure ("" where there is none to
	// read); stall adds up its intervals' split (nil until one is known).
	psiDir string
	stall  *cgroup.StallSplit
	// settings and procs are the last read (nil, -1 before the first),
	// at settingsAt (ByNeed.SettingsEvery).
	settings   *cgroup.CPULimits
	procs      int
	settingsAt time.Duration
	// gate is the group's (nil: none); gateUsage its usage read just
	// before the group's last read (gated: there was one at that instant).
	gate      *gate
	gateUsage uint64
	gated     bool
	// perCPU reads the split while the group is hot (ByNeed.PerCPU);
	// perCPUFailed: it could not be, not tried again; splitErrs counts
	// its reads that failed in a row (splitTries).
	perCPU       *cgroup.PerCPUReader
	perCPUFailed bool
	splitErrs    int
	split        []uint64
	// quota is the group's quota per period at its last report (or when
	// opened; 0 without: limited). With ByNeed.Stat (a v1 group
	// with a quota): hist the usage at its last
	// samples (a ring, histN pushed), where statDue looks back a period;
	// thrMovedAt the time of the last sample at which nr_throttled was
	// found moved (thrMoved: there was one); statStale, that the last
	// sample carried cpu.stat instead of reading it (Report reads it);
	// statAlways, that a report found a move statDue had said could not
	// happen: read at every sample from then on.
	quota                 time.Duration
	hist                  []usagePoint
	histN                 int
	thrMoved              bool
	thrMovedAt            time.Duration
	statStale, statAlways bool
	// written: the group's CPU settings were written since they were
	// last read (inotify, on v1: dirEvents): the quota and limited the
	// rules above hold may be out of date, so its cpu.stat is read at
	// each of its samples, and its settings at the next report, which
	// clears it. A lowered quota would otherwise leave a throttle unseen
	// by statDue until that report, and a quota set on a group without
	// one its cpu.stat unread until the settings were read again
	// (SettingsEvery).
	written bool
}

// limited says whether g had a quota at its last report (or when opened).
func (g *group) limited() bool { return g.quota > 0 }

// usagePoint is a group's cumulative usage at a sample.
type usagePoint struct {
	at    time.Duration
	usage uint64
}

// fresh says whether g's settings and process count are to be read at a
// report whose last sample is at (ByNeed.SettingsEvery).
func (w *Watcher) fresh(g *group, at time.Duration) bool {
	return w.opts.ByNeed.SettingsEvery <= 0 || g.settings == nil || g.hot || g.written || at-g.settingsAt >= w.opts.ByNeed.SettingsEvery
}

// sample is a group's counters at one instant; stale: its cpu.stat
// counters were carried from an earlier read and may have moved since
// (ByNeed.Stat: nr_throttled cannot have, nr_periods can).
type sample struct {
	at time.Duration
	cgroup.UsageReading
	stale bool
}

// New finds the hierarchy to watch under opts.Root and the groups in it.
func New(opts Options) (*Watcher, error) {
	opts.defaults()
	if opts.SampleEvery < time.Millisecond {
		return nil, fmt.Errorf("sampling every %s: give 1ms or more", opts.SampleEvery)
	}
	if opts.ByNeed.Coarse && opts.ByNeed.Policy == nil {
		return nil, errors.New("a coarse grid (ByNeed.Coarse) without a Policy to say where it is: give one")
	}
	src, err := FindSource(opts.Root)
	if err != nil {
		return nil, err
	}
	w := &Watcher{opts: opts, src: src, groups: map[string]*group{}, open: cgroup.OpenCounterFile, cpus: runtime.NumCPU()}
	if opts.Open != nil {
		w.open = opts.Open
	}
	w.events, w.eventsErr = newDirEvents()
	if opts.ByNeed.Stat && src.Version == "v1" {
		w.slack, _ = cgroup.ReadThrottleSlack(opts.Root) // 0 where it cannot be read: cpu.stat at every sample
	}
	if err := w.Discover(); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// Source returns the hierarchy being watched.
func (w *Watcher) Source() *Source { return w.src }

// Close closes every counter file.
func (w *Watcher) Close() error {
	for _, g := range w.groups {
		g.close()
	}
	w.groups, w.sorted, w.hotList, w.hotListOK = map[string]*group{}, nil, nil, false
	for _, gt := range w.gates {
		gt.counter.Close()
	}
	w.gates = nil
	w.events.close()
	w.events = nil
	return nil
}
