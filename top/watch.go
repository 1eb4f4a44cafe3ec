package top

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
	// Observe, if set, is called by Sample with every group's identity and
	// cumulative usage (ns) at each sample (the agent keeps its demand from
	// them). What it returns says whether the group is hot (Coarse): read
	// at every instant until a later call says otherwise. perCPU is the
	// group's per-CPU split at the sample (Options.PerCPU; nil where none
	// was read), valid until the call returns.
	Observe func(path string, id Identity, at time.Duration, usageNs, throttled uint64, perCPU []uint64) (hot bool)
	// Coarse, if set, thins the sampling of the groups Every picks: at an
	// instant (a multiple of SampleEvery since the start) such a group is
	// read only when Coarse says the instant is on the coarse grid, or the
	// group is hot (Observe); Run sleeps through the instants at which
	// nothing is to be read. nil reads them at every instant.
	Coarse func(at time.Duration) bool
	// Every, if set, picks the groups read at every sample (by their
	// identity, at each Discover); the others are read at their first
	// sample (Observe sees them appear) and then only at each Report: their
	// rows have the interval's totals and means, and no peak within a
	// period, settings, pressure or process count. nil reads every group
	// at every sample (top does; the agent reads the containers it
	// summarises only).
	Every func(Identity) bool
	// SettingsEvery, if set, reads the settings (quota, period, burst,
	// shares or weight) and process count of a group that is not hot
	// (Observe) at the first report at least this long after the last
	// read, and carries the last values at the reports between; a hot
	// group's are read at every report. 0 reads them at every report (top
	// does; the agent, with sampling by need, reads cold containers' once
	// a minute: most of its idle cost was opening those files).
	SettingsEvery time.Duration
	// PerCPU reads a hot group's per-CPU split (cgroup.PerCPUReader) at
	// each of its samples, for Observe. On v1 the split is
	// cpuacct.usage_percpu, whose sum is cpuacct.usage: it is read in the
	// usage's place, one pread for both. A group whose reader cannot be
	// opened goes without (not tried again), and so does a group of more
	// than SplitMaxThreads threads on v2; a read that fails is tried again
	// at the next hot sample (counted in ReadErrors), up to splitTries in a
	// row.
	PerCPU bool
	// StatByNeed, on v1 (where cpu.stat is a file of its own beside
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
	StatByNeed bool
	// Open opens the groups' counter files for repeated reading (nil:
	// cgroup.OpenCounterFile); tests wrap it to fail reads.
	Open cgroup.OpenFunc
}

// SplitMaxThreads is the most threads a cgroup v2 group may have for its
// per-CPU split to be read (Options.PerCPU): v2 has no per-CPU usage file,
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
	// hot, whether a group Every picks was hot at it (Options.Coarse).
	taken  atomic.Int64
	clock  atomic.Pointer[cgroup.Clock]
	lastAt time.Duration
	hot    bool
	// hotList holds the groups hot after the last Sample, in path order
	// (hotListOK: since the last Discover), the only ones read off the
	// coarse grid.
	hotList   []*group
	hotListOK bool
	// unlocked makes Run wake on a Go ticker instead of the clock (a
	// benchmark's reference: what it did before).
	unlocked bool
	// cpus bounds the CPUs a group's stall is spread over (SplitStall).
	cpus int
	// slack is cgroup.ThrottleSlack on this host with Options.StatByNeed
	// (0: off); missed counts the moves of nr_throttled a report found
	// that statDue had said could not happen (then the group's cpu.stat
	// is read at every sample).
	slack  time.Duration
	missed atomic.Int64
	// readErrors counts the reads of a group's counters that failed while
	// the group was still there (ReadErrors).
	readErrors atomic.Int64
	// gates count the usage of the lowest group that holds every group
	// Every picks under each top-level group (kubepods, throttlelab: a
	// gate above both would be the root, which always moves); none without
	// Coarse. See Sample.
	gates []*gate
	// byCPUDir finds a group by its cpu directory (settingsWritten).
	byCPUDir map[string]*group
}

// gate is the usage of one group above groups Every picks (Sample).
type gate struct {
	dir     string
	counter *cgroup.UsageCounter
	usage   uint64 // at the current grid instant
	ok      bool   // read at it
}

// group is one watched cgroup.
type group struct {
	ref      Ref
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
	// every: read at every sample (Options.Every), else at reports; hot:
	// read at every instant, not only on the coarse grid (Options.Coarse).
	every, hot bool
	tracker    *cgroup.PeakTracker
	pressure   *Pressure // at the interval's start
	// psiDir holds the group's cpu.pressure ("" where there is none to
	// read); stall adds up its intervals' split (nil until one is known).
	psiDir string
	stall  *cgroup.StallSplit
	// settings and procs are the last read (nil, -1 before the first),
	// at settingsAt (Options.SettingsEvery).
	settings   *cgroup.CPULimits
	procs      int
	settingsAt time.Duration
	// gate is the group's (nil: none); gateUsage its usage read just
	// before the group's last read (gated: there was one at that instant).
	gate      *gate
	gateUsage uint64
	gated     bool
	// perCPU reads the split while the group is hot (Options.PerCPU);
	// perCPUFailed: it could not be, not tried again; splitErrs counts
	// its reads that failed in a row (splitTries).
	perCPU       *cgroup.PerCPUReader
	perCPUFailed bool
	splitErrs    int
	split        []uint64
	// quota is the group's quota per period at its last report (or when
	// opened; 0 without: limited). With Options.StatByNeed (a v1 group
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
// report whose last sample is at (Options.SettingsEvery).
func (w *Watcher) fresh(g *group, at time.Duration) bool {
	return w.opts.SettingsEvery <= 0 || g.settings == nil || g.hot || g.written || at-g.settingsAt >= w.opts.SettingsEvery
}

// sample is a group's counters at one instant; stale: its cpu.stat
// counters were carried from an earlier read and may have moved since
// (Options.StatByNeed: nr_throttled cannot have, nr_periods can).
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
	src, err := FindSource(opts.Root)
	if err != nil {
		return nil, err
	}
	w := &Watcher{opts: opts, src: src, groups: map[string]*group{}, open: cgroup.OpenCounterFile, cpus: runtime.NumCPU()}
	if opts.Open != nil {
		w.open = opts.Open
	}
	w.events, w.eventsErr = newDirEvents()
	if opts.StatByNeed && src.Version == "v1" {
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

// Discover finds the groups that appeared since the last call, opens their
// counters, and drops the groups that are gone. It watches every group's
// directories for new ones: Run looks again soon after one is made.
func (w *Watcher) Discover() error {
	refs, err := Discover(w.opts.Root, w.src)
	if err != nil {
		return err
	}
	w.rediscover = false
	if w.events != nil {
		w.events.failed, w.events.err = 0, nil
	}
	seen := make(map[string]bool, len(refs))
	for _, r := range refs {
		seen[r.Path] = true
		// A directory made before its parent's watch was added was not
		// seen by the walk nor by a watch: look again.
		// On v1 the writes to a group's CPU settings are watched too
		// (settingsWritten); on v2 the group's directory holds files the
		// kernel itself notifies of (memory.events, ...), often.
		if w.events.watch(r.CPUDir, w.src.Version == "v1") {
			w.rediscover = true
		}
		if r.AcctDir != r.CPUDir && w.events.watch(r.AcctDir, false) {
			w.rediscover = true
		}
		g, ok := w.groups[r.Path]
		// A v1 group can show up in one hierarchy before the other (a
		// manager makes cpu, then cpuacct): reopen it when its directories
		// change. One that could not be opened is tried again (one whose
		// last read failed keeps its files: its next sample reads again).
		if ok && !g.gone && g.counters != nil && g.ref.CPUDir == r.CPUDir && g.ref.AcctDir == r.AcctDir {
			continue
		}
		if ok {
			g.close()
		}
		w.groups[r.Path] = w.openGroup(r)
	}
	for p, g := range w.groups {
		if !seen[p] || g.gone {
			g.close()
			delete(w.groups, p)
		}
	}
	w.name()
	w.sorted = w.sorted[:0]
	for _, r := range refs {
		if g, ok := w.groups[r.Path]; ok {
			g.every = w.opts.Every == nil || w.opts.Every(g.id)
			w.sorted = append(w.sorted, g)
		}
	}
	w.openGates()
	w.hotList, w.hotListOK = w.hotList[:0], false
	clear(w.byCPUDir)
	if w.byCPUDir == nil {
		w.byCPUDir = map[string]*group{}
	}
	for _, g := range w.sorted {
		if g.ref.CPUDir != "" {
			w.byCPUDir[g.ref.CPUDir] = g
		}
	}
	return nil
}

// settingsWritten marks the group of directory dir (every group for "")
// as having had its CPU settings written since they were last read
// (dirEvents.changed): its quota may not be the one the rules hold. Only
// groups Every picks (the others' settings are not read: Options.Every).
func (w *Watcher) settingsWritten(dir string) {
	if dir == "" {
		for _, g := range w.sorted {
			g.written = g.every
		}
		return
	}
	if g := w.byCPUDir[dir]; g != nil && g.every {
		g.written = true
	}
}

// openGates opens the gates (Sample): for each top-level group, the usage
// counter of the lowest directory that holds every group Every picks under
// it, in the hierarchy that counts usage; none without Coarse. Gates kept
// keep their file.
func (w *Watcher) openGates() {
	dirs := map[string]string{} // by top-level group
	var tops []string
	if w.opts.Coarse != nil {
		for _, g := range w.sorted {
			d := g.ref.AcctDir
			if !g.every || g.err != nil || d == "" {
				continue
			}
			top, _, _ := strings.Cut(strings.TrimPrefix(g.ref.Path, "/"), "/")
			dir, ok := dirs[top]
			if !ok {
				dirs[top] = d
				tops = append(tops, top)
				continue
			}
			for dir != d && !strings.HasPrefix(d, dir+string(filepath.Separator)) && filepath.Dir(dir) != dir {
				dir = filepath.Dir(dir)
			}
			dirs[top] = dir
		}
	}
	old := map[string]*gate{}
	for _, gt := range w.gates {
		old[gt.dir] = gt
	}
	w.gates = w.gates[:0]
	byTop := map[string]*gate{}
	for _, top := range tops {
		dir := dirs[top]
		gt := old[dir]
		if gt != nil {
			delete(old, dir)
		} else {
			u, err := cgroup.OpenCounters(w.src.Version, "", dir, w.open)
			if err != nil || !u.CountsUsage() {
				if u != nil {
					u.Close()
				}
				continue // no gate: these groups are read at each grid instant
			}
			gt = &gate{dir: dir, counter: u}
		}
		w.gates = append(w.gates, gt)
		byTop[top] = gt
	}
	for _, gt := range old {
		gt.counter.Close()
	}
	for _, g := range w.sorted {
		top, _, _ := strings.Cut(strings.TrimPrefix(g.ref.Path, "/"), "/")
		gt := byTop[top]
		if !g.every || gt != g.gate {
			g.gated = false // readings of another gate
		}
		g.gate = gt
		if !g.every {
			g.gate = nil
		}
	}
}

// SampleCounts returns how many sampling instants were kept (samples taken,
// and instants Run slept through because nothing was to be read at them:
// Options.Coarse) and how many were skipped because a sample came late
// (the process was not scheduled in time, or its work took longer than the
// interval). Safe to call while Run runs.
func (w *Watcher) SampleCounts() (kept, missed int64) {
	kept = w.taken.Load()
	if c := w.clock.Load(); c != nil {
		_, missed = c.Counts()
		kept += c.Planned()
	}
	return kept, missed
}

// Unwatched says what keeps new groups from being found as their
// directories are made (then they are found at each report): nil when every
// directory is watched.
func (w *Watcher) Unwatched() error {
	switch {
	case w.eventsErr != nil:
		return w.eventsErr
	case w.events != nil && w.events.failed > 0:
		return fmt.Errorf("%d of the groups' directories are not watched: %w", w.events.failed, w.events.err)
	}
	return nil
}

// SetNames gives the watcher pod and container names from another source
// than the kubelet's log directories (the Kubernetes API: a node whose
// /var/log/pods the reader cannot open); they are merged with the log
// directories' at the next Discover, and the groups named again. Safe to
// call while Run runs.
func (w *Watcher) SetNames(p *PodNames) {
	w.extraMu.Lock()
	w.extra, w.extraChanged = p, true
	w.extraMu.Unlock()
}

// name identifies new groups, reading the kubelet's log directories again
// when a pod or container is not known yet (or still unnamed) or SetNames
// gave other names.
func (w *Watcher) name() {
	w.extraMu.Lock()
	extra, changed := w.extra, w.extraChanged
	w.extraChanged = false
	w.extraMu.Unlock()
	reread := w.pods == nil || changed
	for _, g := range w.groups {
		if g.id.Kind == "" {
			g.id = Identify(g.ref.Path, w.pods)
		}
		reread = reread || w.pods.Unknown(g.id)
	}
	if !reread {
		return
	}
	w.pods = ReadPodNames(w.opts.Root)
	w.pods.Merge(extra)
	for _, g := range w.groups {
		if w.pods.Unknown(g.id) || g.id.PodUID != "" {
			g.id = Identify(g.ref.Path, w.pods)
		}
	}
}

func (w *Watcher) openGroup(r Ref) *group {
	g := &group{ref: r, err: r.Err}
	if g.err != nil {
		return g
	}
	var err error
	if g.counters, err = cgroup.OpenCounters(w.src.Version, r.CPUDir, r.AcctDir, w.open); err != nil {
		g.err = err
		return g
	}
	period := time.Duration(0)
	if r.CPUDir != "" {
		if l, err := cgroup.ReadGroupCPU(r.CPUDir, w.src.Version); err == nil && l.QuotaUsec > 0 {
			period = time.Duration(l.PeriodUsec) * time.Microsecond
			g.quota = time.Duration(l.QuotaUsec) * time.Microsecond
		}
	}
	g.period = period
	g.tracker = cgroup.NewPeakTracker(period, w.peakWindow(period))
	g.psiDir = w.psiDir(g)
	if g.psiDir != "" {
		if p, err := ReadPressure(g.psiDir); err == nil {
			g.pressure = &p
		}
	}
	return g
}

// psiDir is the directory of a group's cpu.pressure: the group itself on
// v2; on a hybrid host its v2 group of the same path, which holds the same
// tasks where their manager places them at one path in every hierarchy.
// "" where no v2 mount holds the group's path.
func (w *Watcher) psiDir(g *group) string {
	m := w.src.PSI
	switch {
	case m == nil:
		return ""
	case w.src.Version == "v2":
		return g.dir()
	case m.Root == "/":
		return filepath.Join(w.opts.Root, m.MountPoint, g.ref.Path)
	case g.ref.Path == m.Root || strings.HasPrefix(g.ref.Path, m.Root+"/"):
		return filepath.Join(w.opts.Root, m.MountPoint, strings.TrimPrefix(g.ref.Path, m.Root))
	}
	return ""
}

// peakWindow is the sliding window of a group's peak when its periods cannot
// be seen: its period if it has a quota, else Options.Window.
func (w *Watcher) peakWindow(period time.Duration) time.Duration {
	if period > 0 {
		return period
	}
	return w.opts.Window
}

func (g *group) close() {
	g.closeSplit()
	if g.counters != nil {
		g.counters.Close()
		g.counters = nil
	}
}

// vanished reports whether a read error means the group was removed: the
// kernel answers ENODEV on a file kept open past its group's rmdir.
func vanished(err error, dir string) bool {
	return errors.Is(err, syscall.ENODEV) || errors.Is(err, fs.ErrNotExist) || (dir != "" && !exists(dir))
}

// Sample reads every group's usage and cpu.stat once (those Every picks:
// at the coarse grid's instants, and hot ones at every instant; see
// Options.Coarse); at is the time since the watcher started, in order.
//
// With Coarse, at a grid instant the gates (the usage of the lowest group
// that holds every group Every picks under each top-level group) are read
// first: a cold group whose
// gate reading at its last read is the same as now used no CPU since
// (usage is charged to every ancestor at once, and never goes down), so
// its reading is carried to this instant instead of read again, where the
// reading would have been its usage alone (its cpu.stat is not due:
// group.read). A node whose containers are all idle is read once per grid
// instant; where one of them ran, every group is read as without the gate
// (one read more per grid instant).
func (w *Watcher) Sample(at time.Duration) {
	w.lastAt = at
	w.taken.Add(1)
	if w.events.changed(w.settingsWritten) { // before the reads: a write before this instant counts at it
		w.rediscover = true
	}
	grid := w.opts.Coarse == nil || w.opts.Coarse(at)
	for _, gt := range w.gates {
		gt.ok = false
		if grid {
			if r, err := gt.counter.Read(false); err == nil && r.HasUsageNs {
				gt.usage, gt.ok = r.UsageNs, true
			}
		}
	}
	hot := false
	// Off the grid only hot groups are read: their list, once one full
	// pass since the last Discover has read every new group.
	list, full := w.hotList, grid || !w.hotListOK
	if full {
		list, w.hotList = w.sorted, w.hotList[:0]
	}
	for _, g := range list {
		if g.samples == 0 || (g.every && (grid || g.hot)) {
			gt := g.gate
			if gt != nil && gt.ok && g.gated && g.gateUsage == gt.usage && w.carries(g, at) {
				w.take(g, sample{at: at, UsageReading: g.last.UsageReading, stale: w.statByNeed(g)}, nil)
			} else {
				w.sampleGroup(g, at)
			}
			g.gated = gt != nil && gt.ok
			if g.gated {
				g.gateUsage = gt.usage
			}
		}
		isHot := g.every && g.hot && !g.gone
		hot = hot || isHot
		if full && isHot {
			w.hotList = append(w.hotList, g)
		}
	}
	if !full {
		w.hotList = slices.DeleteFunc(w.hotList, func(g *group) bool { return !g.every || !g.hot || g.gone })
	}
	w.hot, w.hotListOK = hot, true
}

// carries says whether g's reading at at may be carried from its last one
// when its gate did not move: it is a cold group Every picks whose read
// would be its usage alone (on v1 its cpu.stat is not due; on v2, where one
// read gives both, its counters cannot move: no quota, or its period timer
// stopped), and the gate's usage counts its own.
func (w *Watcher) carries(g *group, at time.Duration) bool {
	if !(g.every && !g.hot && !g.gone && g.err == nil && !g.written && g.samples > 0 &&
		(g.statRead || g.counters.Usage == nil) && g.last.HasUsageNs) {
		return false
	}
	if w.statByNeed(g) {
		return !w.statDue(g, at, g.last.UsageNs)
	}
	return !(g.limited() && at-g.active <= statIdle(g.period, w.opts.SampleEvery))
}

// sampleGroup reads one group's usage and cpu.stat at time at. A read
// that fails while the group's directory is still there is counted
// (ReadErrors) and leaves the group as it was, its err set until a read
// works again: the next sample reads it again, and the interval from the
// last reading that worked is taken as one (as a missed instant is).
func (w *Watcher) sampleGroup(g *group, at time.Duration) {
	if g.gone || g.counters == nil {
		return
	}
	split := w.readSplit(g)
	s, err := w.read(g, at, split)
	if err != nil {
		w.failed(g, err)
		return
	}
	g.err = nil
	w.take(g, s, split)
}

// failed takes a failed read of g: gone where the group was removed, else
// counted and kept in g.err (its row shows it while no read works).
func (w *Watcher) failed(g *group, err error) {
	if vanished(err, g.dir()) {
		g.gone = true
		g.close()
		return
	}
	g.err = err
	w.readErrors.Add(1)
}

// ReadErrors counts the reads of a group's counters (at a sample or a
// report) that failed while its directory was still there: transient
// errors (EBUSY, a short read, a read racing a move of the group) and
// lasting ones (permission) alike. Safe to call while Run runs.
func (w *Watcher) ReadErrors() int64 { return w.readErrors.Load() }

// readSplit reads a hot group's per-CPU split (Options.PerCPU), nil where
// none is to be read or it cannot be.
func (w *Watcher) readSplit(g *group) []uint64 {
	if !w.opts.PerCPU || !g.hot || g.perCPUFailed || !g.every {
		g.closeSplit()
		return nil
	}
	if g.perCPU == nil {
		dir := g.ref.AcctDir
		if dir == "" {
			dir = g.ref.CPUDir
		}
		r, err := cgroup.OpenPerCPU(w.src.Version, dir, w.opts.Root)
		if err != nil {
			g.perCPUFailed = true
			return nil
		}
		g.perCPU = r
	}
	var err error
	g.split, err = g.perCPU.Read(g.split)
	switch {
	case err == nil && g.perCPU.Threads() > SplitMaxThreads:
		g.perCPUFailed = true
		g.closeSplit()
		return nil
	case err != nil:
		// A transient error (a thread that exited between the listing
		// and its read, on v2; a read racing a move) is read again,
		// reopened, at the next hot sample; this one goes without a split
		// (its usage read from the counters). splitTries in a row, and
		// the group goes without for good.
		g.closeSplit()
		if !vanished(err, g.dir()) {
			w.readErrors.Add(1)
		}
		if g.splitErrs++; g.splitErrs >= splitTries {
			g.perCPUFailed = true
		}
		return nil
	}
	g.splitErrs = 0
	return g.split
}

// splitTries is how many reads of a group's per-CPU split may fail in a
// row before it goes without one for good (Options.PerCPU).
const splitTries = 3

func (g *group) closeSplit() {
	if g.perCPU != nil {
		g.perCPU.Close()
		g.perCPU = nil
	}
}

// take takes one reading of g at time at (split: its per-CPU split, or
// nil).
func (w *Watcher) take(g *group, s sample, split []uint64) {
	if g.samples > 0 && (s.UsageNs < g.last.UsageNs || s.Periods < g.last.Periods) {
		g.samples = 0 // made again under the same path: start over
		g.stall = nil
	}
	if g.samples == 0 {
		g.first = s
		g.histN = 0
	}
	g.last = s
	g.samples++
	g.statStale = s.stale
	if w.statByNeed(g) {
		w.push(g, s.at, s.UsageNs)
	}
	// A group not hot at its last sample was read on the coarse grid
	// since (Options.Coarse): a slot as long as its period, in which no
	// period boundary can be placed (cgroup.PeakPoint.Coarse).
	coarse := w.opts.Coarse != nil && !g.hot && g.samples > 1
	if s.HasUsageNs && w.opts.Observe != nil {
		g.hot = w.opts.Observe(g.ref.Path, g.id, s.at, s.UsageNs, s.ThrottledPeriods, split)
	}
	if s.HasUsageNs && g.every {
		g.tracker.Add(cgroup.PeakPoint{At: s.at, UsageNs: s.UsageNs, Periods: s.Periods, Throttled: s.ThrottledPeriods, Stale: s.stale, Coarse: coarse})
	}
}

func (g *group) dir() string {
	if g.ref.CPUDir != "" {
		return g.ref.CPUDir
	}
	return g.ref.AcctDir
}

// read reads the group's counters at time at. Where cpu.stat is a file of
// its own (v1, beside cpuacct.usage), it is read only when its counters
// can have moved since the last read, and the last ones read are carried
// on otherwise: they move only at the period timer, which runs while the
// group has a quota and used CPU (or was throttled) within the last two
// periods: the period it used CPU in, and one idle period after which the
// timer stops; the group's next use starts it again. So a group with a
// quota has cpu.stat read at every sample while its usage or its cpu.stat
// moved within the last two periods and two samples (statIdle), and at the
// sample at which its usage moves again; an idle one, only its usage. With
// Options.StatByNeed, only where nr_throttled can have moved (statDue).
func (w *Watcher) read(g *group, at time.Duration, split []uint64) (sample, error) {
	if g.counters.Usage == nil { // v2: cpu.stat holds the usage
		r, err := g.counters.Read(true)
		if err == nil && (g.samples == 0 || r.UsageNs != g.last.UsageNs || r.CPUCounters != g.last.CPUCounters) {
			g.active = at // for the gate (carries)
		}
		return sample{at: at, UsageReading: r}, err
	}
	var r cgroup.UsageReading
	if split != nil && g.ref.AcctDir != "" {
		// v1's cpuacct.usage_percpu, read already: its sum is cpuacct.usage
		for _, v := range split {
			r.UsageNs += v
		}
		r.HasUsageNs = true
	} else {
		var err error
		if r, err = g.counters.Read(false); err != nil {
			return sample{at: at, UsageReading: r}, err
		}
	}
	moved := g.samples == 0 || r.UsageNs != g.last.UsageNs
	if moved {
		g.active = at
	}
	due := !g.statRead || g.written
	if !due && g.limited() {
		if w.statByNeed(g) {
			due = w.statDue(g, at, r.UsageNs)
		} else {
			due = moved || at-g.active <= statIdle(g.period, w.opts.SampleEvery)
		}
	}
	if !due {
		r.CPUCounters = g.last.CPUCounters // not read: as they were
		return sample{at: at, UsageReading: r, stale: w.statByNeed(g)}, nil
	}
	c, err := g.counters.ReadStat()
	if err != nil {
		return sample{at: at, UsageReading: r}, err
	}
	if g.statRead && c != g.last.CPUCounters {
		g.active = at
	}
	if g.statRead && c.ThrottledPeriods != g.last.ThrottledPeriods {
		g.thrMoved, g.thrMovedAt = true, at
	}
	r.CPUCounters, g.statRead = c, true
	return sample{at: at, UsageReading: r}, nil
}

// statByNeed says whether g's cpu.stat is read by need
// (Options.StatByNeed): a limited v1 group, whose usage is in a file of
// its own, on a host whose slack is known.
func (w *Watcher) statByNeed(g *group) bool {
	return w.slack > 0 && g.limited() && g.counters != nil && g.counters.Usage != nil
}

// statDue says whether nr_throttled can have moved since g's last sample,
// at a sample at time at with usage usageNs (Options.StatByNeed), so that
// its cpu.stat must be read. The kernel adds to nr_throttled at a tick of
// the group's period timer, when a run queue of the group is throttled
// then; it was throttled within the period that tick ends (or earlier,
// and then the earlier ticks counted it too), and the group's usage
// within that period is then at least its quota less the slack
// (cgroup.ThrottleSlack). A tick after the last sample (at prev) ends a
// period that began after prev less a period; the sample looked back to
// is the last at or before that less one sample interval (a refill a
// little late). So the read is due where the usage since that sample
// reaches the quota less the slack, where the last move was seen within
// that reach (throttled periods in a row, whose later ones may hold less
// use than their quota: the refill first pays what the group ran over),
// and where the history does not reach back so far. A moment's idle
// ticks (nr_periods) are not read: Report reads them.
func (w *Watcher) statDue(g *group, at time.Duration, usageNs uint64) bool {
	floor := g.quota - w.slack
	if g.statAlways || g.quota <= 0 || floor <= 0 || g.histN == 0 || len(g.hist) == 0 {
		return true
	}
	n := len(g.hist)
	prev := g.hist[(g.histN-1)%n].at
	back := prev - g.period - w.opts.SampleEvery
	if g.thrMoved && g.thrMovedAt > back {
		return true
	}
	for i := g.histN - 1; i >= 0 && i > g.histN-1-n; i-- {
		p := g.hist[i%n]
		if p.at <= back {
			return usageNs < p.usage || usageNs-p.usage >= uint64(floor)
		}
	}
	return true // the history does not reach back a period
}

// push records g's usage at a sample for statDue; the ring holds a period
// and a few samples more.
func (w *Watcher) push(g *group, at time.Duration, usageNs uint64) {
	n := 4
	if g.period > 0 {
		n += int(min(g.period/w.opts.SampleEvery, 256))
	}
	if len(g.hist) != n {
		g.hist, g.histN = make([]usagePoint, n), 0
	}
	g.hist[g.histN%n] = usagePoint{at: at, usage: usageNs}
	g.histN++
}

// refreshStat reads the cpu.stat that g's last sample carried
// (Options.StatByNeed), so that a report's counters are exact. A move of
// nr_throttled since the last read that statDue, asked now, says cannot
// have happened means its rule failed for this group (its tasks are not
// the same in both hierarchies, its quota changed unseen): counted, and
// the group's cpu.stat is read at every sample from then on. (A tick
// after the last sample is within statDue's reach now: no false alarm.)
func (w *Watcher) refreshStat(g *group) error {
	c, err := g.counters.ReadStat()
	if err != nil {
		return err
	}
	if c.ThrottledPeriods != g.last.ThrottledPeriods {
		r, err := g.counters.Read(false)
		if err != nil {
			return err
		}
		if !w.statDue(g, g.last.at, r.UsageNs) {
			g.statAlways = true
			w.missed.Add(1)
		}
		g.thrMoved, g.thrMovedAt = true, g.last.at
	}
	if c != g.last.CPUCounters {
		g.active = g.last.at
	}
	g.last.CPUCounters, g.statStale = c, false
	return nil
}

// MissedThrottles counts the moves of nr_throttled that a report found
// after Options.StatByNeed had left cpu.stat unread where its rule said
// none could happen (0 where the rule holds). Safe to call while Run runs.
func (w *Watcher) MissedThrottles() int64 { return w.missed.Load() }

// statIdle is how long after its counters last moved a v1 group with a quota
// of the given period has its cpu.stat read at every sample (sampling every
// every): two periods (the period timer's last two ticks) and two samples.
func statIdle(period, every time.Duration) time.Duration {
	return 2*period + 2*every
}

// Report closes the interval that ends with the last Sample and returns one
// Stats per group that is still there, sorted by path; the next interval
// starts at that sample. Groups seen in fewer than two samples are left out
// (they appear in the next report), and so are groups removed meanwhile.
func (w *Watcher) Report() []Stats {
	out := make([]Stats, 0, len(w.sorted))
	for _, g := range w.sorted {
		if (!g.every || w.opts.Coarse != nil) && g.samples > 0 && g.last.at < w.lastAt {
			// Read at reports only, or on the coarse grid and not at the
			// last sample: now, just after it, so that every group has its
			// row (a report that came after a gap, off the grid, would
			// leave it out).
			w.sampleGroup(g, w.lastAt)
		}
		if g.gone {
			continue
		}
		if g.err != nil {
			out = append(out, Stats{Path: g.ref.Path, Identity: g.id, Error: errorText(g.err)})
			continue
		}
		if g.samples < 2 {
			continue
		}
		var err error
		if g.statStale {
			err = w.refreshStat(g)
		}
		var st Stats
		if err == nil {
			st, err = w.report(g)
		}
		if err != nil {
			if vanished(err, g.dir()) {
				g.gone = true
				g.close()
				continue
			}
			w.readErrors.Add(1) // this row shows it; the samples go on
			st = Stats{Path: g.ref.Path, Identity: g.id, Error: errorText(err)}
		}
		out = append(out, st)
		g.first, g.samples = g.last, 1
	}
	return out
}

// errorText says what an unreadable group's row shows.
func errorText(err error) string {
	if errors.Is(err, fs.ErrPermission) {
		return "permission denied (run as root)"
	}
	return err.Error()
}

func (w *Watcher) report(g *group) (Stats, error) {
	a, b := g.first, g.last
	secs := (b.at - a.at).Seconds()
	st := Stats{Path: g.ref.Path, Identity: g.id, IntervalSeconds: secs}
	t := &st.Totals
	t.QuotaUsec, t.HasUsage, t.Limits = -1, b.HasUsageNs, g.ref.CPUDir != ""
	if b.HasUsageNs {
		st.UsageCores = ptr(float64(b.UsageNs-a.UsageNs) / 1e9 / secs)
		t.UsageSeconds = float64(b.UsageNs) / 1e9
		if b.HasUsage { // v2 cpu.stat
			t.UserSeconds, t.SystemSeconds = ptr(float64(b.UserUsec)/1e6), ptr(float64(b.SystemUsec)/1e6)
		}
	}
	d := b.CPUStat.Sub(a.CPUStat)
	st.Periods, st.ThrottledPeriods, st.Bursts = d.Periods, d.ThrottledPeriods, d.Bursts
	if d.Periods > 0 {
		st.ThrottledPeriodsRatio = float64(d.ThrottledPeriods) / float64(d.Periods)
	}
	st.ThrottledSecondsPerSecond = float64(d.ThrottledUsec) / 1e6 / secs
	st.BurstSecondsPerSecond = float64(d.BurstUsec) / 1e6 / secs
	t.Periods, t.ThrottledPeriods, t.Bursts = b.Periods, b.ThrottledPeriods, b.Bursts
	t.ThrottledSeconds, t.BurstSeconds = float64(b.ThrottledUsec)/1e6, float64(b.BurstUsec)/1e6

	if peak, basis, window, ok := g.tracker.Take(); ok {
		st.PeakPeriodCores, st.PeakBasis = ptr(peak), basis
		if basis == BasisWindow {
			st.PeakWindowUsec = window.Microseconds()
		}
	}
	if !g.every {
		// Read at reports only (Options.Every): its usage and cpu.stat,
		// not its settings, pressure or processes (the agent needs none
		// of them for the groups it does not summarise).
		return st, nil
	}
	read := w.fresh(g, b.at)
	cur := &cgroup.CPULimits{}
	if g.ref.CPUDir != "" {
		l := g.settings
		if read || l == nil {
			var err error
			if l, err = cgroup.ReadGroupCPU(g.ref.CPUDir, w.src.Version); err != nil {
				return st, err
			}
			g.written = false // read again: the rules hold them from here
		}
		cur = l
		st.PeriodUsec, st.Shares, st.Weight, t.QuotaUsec = l.PeriodUsec, l.Shares, l.Weight, l.QuotaUsec
		period := time.Duration(0)
		g.quota = 0
		if l.QuotaUsec > 0 {
			g.quota = time.Duration(l.QuotaUsec) * time.Microsecond
			st.LimitCores = ptr(l.LimitCores)
			st.BurstCores = float64(l.BurstUsec) / float64(l.PeriodUsec)
			period = time.Duration(l.PeriodUsec) * time.Microsecond
		}
		g.period = period
		g.tracker.SetPeriod(period, w.peakWindow(period))
		limit := 0.0
		if st.LimitCores != nil {
			limit = *st.LimitCores + st.BurstCores
		}
		g.tracker.SetLimit(limit)
		if g.id.Kubelet() {
			if c, ok := RequestCores(l.Shares, l.Weight, w.opts.Mapping); ok {
				st.RequestCores = ptr(c)
			}
		}
	}
	st.StallSplit = StallSplitUnknown
	if g.psiDir != "" {
		if p, err := ReadPressure(g.psiDir); err == nil {
			st.PressureSomeAvg10 = ptr(p.SomeAvg10)
			t.PressureSomeSeconds, t.PressureFullSeconds = ptr(float64(p.SomeTotalUsec)/1e6), ptr(float64(p.FullTotalUsec)/1e6)
			if g.pressure != nil && p.SomeTotalUsec >= g.pressure.SomeTotalUsec {
				some := float64(p.SomeTotalUsec-g.pressure.SomeTotalUsec) / 1e6
				st.PressureSomeRatio = ptr(some / secs)
				if st.UsageCores != nil {
					w.splitStall(g, &st, some, float64(d.ThrottledUsec)/1e6, secs)
				}
			}
			g.pressure = &p
		} else if !exists(g.dir()) {
			return st, err // the group went (a missing cpu.pressure alone is no PSI: a kernel without it, no v2 group)
		}
	}
	if g.stall != nil {
		t.StallQuotaSeconds, t.StallContentionSeconds = ptr(g.stall.QuotaSeconds), ptr(g.stall.ContentionSeconds)
	}
	if read || g.settings == nil {
		n, err := CountProcs(g.dir())
		if err != nil {
			return st, err
		}
		g.procs, g.settingsAt = n, b.at
		g.settings = cur
	}
	st.Procs = g.procs
	return st, nil
}

// splitStall splits the interval's stall of some seconds (cpu.pressure)
// into quota and contention, and adds them to the group's totals.
func (w *Watcher) splitStall(g *group, st *Stats, some, throttled, secs float64) {
	sp := cgroup.SplitStall(some, throttled, *st.UsageCores*secs, secs, w.cpus)
	st.StallSplit = StallSplitPSI
	st.StallQuotaRatio, st.StallContentionRatio = ptr(sp.QuotaSeconds/secs), ptr(sp.ContentionSeconds/secs)
	if g.stall == nil {
		g.stall = &cgroup.StallSplit{}
	}
	g.stall.QuotaSeconds += sp.QuotaSeconds
	g.stall.ContentionSeconds += sp.ContentionSeconds
}

// Rediscover is the shortest time between two Discovers that a directory
// made in the hierarchy asks for: a new group is sampled within it, and
// the runtime's several directories for one container are found at once.
const Rediscover = 100 * time.Millisecond

// Run samples every SampleEvery and calls emit with a report every interval,
// from this goroutine, until ctx ends or emit returns false. Groups that
// appear are picked up within Rediscover of their directory being made
// (inotify; at each report where inotify cannot be had). It sleeps in
// clock_nanosleep (cgroup.Clock: absolute instants, no drift); instants the
// watcher could not keep up with are skipped and counted (SampleCounts),
// not queued. With Options.Coarse it sleeps through the instants at which
// no group is to be read.
func (w *Watcher) Run(ctx context.Context, interval time.Duration, emit func([]Stats) bool) error {
	return w.RunFrom(ctx, time.Now(), interval, emit)
}

// RunFrom is Run with its instants counted from start (start + n *
// SampleEvery; the samples' times are since start): a caller that keeps
// its own time (the agent's, on the wall clock) puts the instants on it.
func (w *Watcher) RunFrom(ctx context.Context, start time.Time, interval time.Duration, emit func([]Stats) bool) error {
	if interval < w.opts.SampleEvery {
		return fmt.Errorf("interval %s is shorter than the sampling interval %s: give a longer one", interval, w.opts.SampleEvery)
	}
	clock := cgroup.NewClock(start, w.opts.SampleEvery)
	w.clock.Store(clock)
	wait := w.waiter(ctx, clock)
	w.Sample(0)
	next := interval
	discovered, walked := time.Duration(0), time.Duration(0)
	for {
		at, ok := wait()
		if !ok {
			return nil
		}
		w.Sample(at) // it reads the events
		if at < next {
			if w.rediscover && at-discovered >= Rediscover {
				if err := w.Discover(); err != nil {
					return err
				}
				discovered = at
			}
			continue
		}
		stats := w.Report()
		now := time.Now()
		for i := range stats {
			stats[i].Time = now
		}
		if !emit(stats) {
			return nil
		}
		for next <= at {
			next += interval
		}
		// The whole tree is walked again at each report where inotify
		// cannot tell of new groups, else at least every FullDiscover (a
		// safety net: the events find new groups within Rediscover), and
		// when names came from elsewhere (SetNames).
		if w.rediscover || w.Unwatched() != nil || at-walked >= FullDiscover || w.namesChanged() {
			if err := w.Discover(); err != nil {
				return err
			}
			discovered, walked = at, at
		}
	}
}

// FullDiscover is the longest Run goes without walking the whole cgroup
// tree again where inotify watches every directory.
const FullDiscover = time.Minute

// namesChanged reports whether SetNames gave names since the last
// Discover.
func (w *Watcher) namesChanged() bool {
	w.extraMu.Lock()
	defer w.extraMu.Unlock()
	return w.extraChanged
}

// maxSkip bounds the instants Run sleeps through at once (Options.Coarse):
// it looks for the coarse grid's next instant no further, and wakes there
// whatever Coarse says.
const maxSkip = 1000

// waiter returns Run's wait before each sample: clock.WaitFor the next
// instant at which a group is to be read (the next one when a group is hot
// or Coarse is nil, else the coarse grid's next), false once ctx is done.
// BenchmarkRunLockedThread measures it against a Go ticker on any thread
// (w.unlocked: what Run did before; it ignores Coarse).
func (w *Watcher) waiter(ctx context.Context, clock *cgroup.Clock) func() (time.Duration, bool) {
	if w.unlocked {
		tick := time.NewTicker(w.opts.SampleEvery)
		context.AfterFunc(ctx, tick.Stop)
		return func() (time.Duration, bool) {
			select {
			case <-ctx.Done():
				return 0, false
			case <-tick.C:
				return time.Since(clock.Start()), true
			}
		}
	}
	every := w.opts.SampleEvery
	return func() (time.Duration, bool) {
		n := clock.Instant() + 1
		if w.opts.Coarse != nil && !w.hot && !w.rediscover {
			for m := n; m < n+maxSkip; m++ {
				if w.opts.Coarse(time.Duration(m) * every) {
					n = m
					break
				}
			}
		}
		return clock.WaitFor(ctx, n)
	}
}

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
