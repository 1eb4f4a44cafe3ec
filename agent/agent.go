package agent

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/top"
)

// NamedTarget is a target the agent advises for, under a short name that
// becomes the metrics' target label.
type NamedTarget struct {
	Name string
	advise.Target
}

// Owner names the workload that owns a pod.
type Owner struct{ Kind, Name string }

// Config configures an Agent.
type Config struct {
	// Root is prepended to every kernel path (the host's root mounted in
	// the agent's container).
	Root string
	// Node is the node's name (the node label).
	Node string
	// SampleEvery is the sampling interval (default 10 ms); Interval how
	// often settings, top's metrics and the containers are refreshed
	// (default 10 s: a scrape interval; each refresh reads five files per
	// container and walks the cgroup tree).
	SampleEvery, Interval time.Duration
	// Mapping reads v2 weights back as requests (default linear).
	Mapping cgroup.WeightMapping
	Summary SummaryConfig
	// Targets to advise for; the first is the one the predictions at
	// "advised" and the /advice endpoint use (default advise.DefaultTarget).
	Targets []NamedTarget
	// Select picks the groups to summarise (default: Kubernetes containers
	// and throttlelab's own groups).
	Select func(top.Identity) bool
	// Owners looks up the owners and names of the pods on the node
	// (optional; nil leaves owner_kind and owner_name empty, and the names
	// to the kubelet's log directories).
	Owners func(ctx context.Context) (Pods, error)
	// Logger gets what goes wrong on the way (default discards).
	Logger *slog.Logger
	// MaxMilli is the node's CPUs in millicores (default runtime.NumCPU):
	// the top of the ladder.
	MaxMilli int64
	// StateDir, if set, is where Run checkpoints the summaries every
	// SaveEvery (default 5 min) and when it ends; LoadState reads them back.
	StateDir  string
	SaveEvery time.Duration
	// Startup is how long the demand of a container that was not there at
	// the agent's first sample (or came while it was down: addContainer) is
	// its start-up, kept apart from the advice (ContainerSummary.SetStartup) and
	// reported on its own; 0 keeps it in.
	Startup time.Duration
	// Hot is sampling by need: which containers are read every SampleEvery,
	// the others every period on the node's grid.
	Hot HotConfig
	// NoPerCPU leaves out the per-CPU split of hot containers (percpu.go):
	// their chunks replay without the kernel's per-CPU slices.
	NoPerCPU bool

	// open opens the watcher's counter files (nil: cgroup's; tests wrap
	// it to fail reads).
	open cgroup.OpenFunc
}

func (c *Config) defaults() {
	if c.Root == "" {
		c.Root = "/"
	}
	if c.SampleEvery <= 0 {
		c.SampleEvery = 10 * time.Millisecond
	}
	if c.Interval <= 0 {
		c.Interval = 10 * time.Second
	}
	if c.Mapping == "" {
		c.Mapping = cgroup.WeightLinear
	}
	if len(c.Targets) == 0 {
		c.Targets = []NamedTarget{{Name: TargetName(advise.DefaultTarget), Target: advise.DefaultTarget.WithDefaults()}}
	}
	if c.Select == nil {
		c.Select = DefaultSelect
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.SaveEvery <= 0 {
		c.SaveEvery = 5 * time.Minute
	}
	if c.MaxMilli <= 0 {
		c.MaxMilli = int64(runtime.NumCPU()) * 1000
	}
	c.Summary.defaults(c.MaxMilli)
	c.Hot.defaults()
}

// byNeed reports whether the coarse grid (SummaryConfig.OnGrid) falls on
// the sampling instants: the fine step (Period/Phases) and the chunk are
// multiples of SampleEvery. Else every container is read at every instant.
func (c *Config) byNeed() bool {
	s := c.Summary
	fine := s.Period / time.Duration(s.Phases)
	return !c.Hot.Always && s.Period%time.Duration(s.Phases) == 0 && fine%c.SampleEvery == 0 && s.Chunk%c.SampleEvery == 0
}

// GCPercent is the garbage collector's target the agent command sets (when
// GOGC does not): a collection once the heap grew by a quarter of the live
// one, not by all of it (Go's default). The agent's heap is a day of
// summaries that changes slowly while replays make garbage every minute;
// at the default the process holds about twice its live heap
// (BenchmarkAgentDay200; docs/performance.md has the figures).
const GCPercent = 25

// DefaultSelect picks Kubernetes containers (not the pods' sandboxes) and
// throttlelab's own groups.
func DefaultSelect(id top.Identity) bool {
	return (id.Kind == top.KindContainer && id.PodUID != "" && !id.Sandbox) || (id.Kind == top.KindThrottlelab && strings.Count(id.Name, "/") >= 2)
}

// Agent keeps a summary per container of a node and serves advice from
// them.
type Agent struct {
	cfg       Config
	w         *top.Watcher
	collector *top.Collector
	start     time.Time

	mu         sync.Mutex
	containers map[string]*container // by cgroup path
	// byPath finds a container by the address of the path string top's
	// watcher passes to observe, the same for a group at every sample:
	// hashing the pointer, not the path's hundred-odd bytes, at thousands
	// of samples a second (observe). Keyed by address and length, since
	// two paths cut from one buffer can start at the same byte. Cleared
	// whenever a container goes.
	byPath  map[pathKey]*container
	owners  map[top.PodName]Owner
	saved   map[string]summaryState // from LoadState, until their containers are seen
	savedAt time.Time               // when that checkpoint was written (zero: none, or not known)
	reports int                     // Updates so far
	// ckptErrs counts the checkpoints not read or not written (state.go).
	ckptErrs checkpointErrors
	// firstSample is the agent time of the first sample (sampled: there
	// was one): a container added after it is starting.
	firstSample time.Duration
	sampled     bool
	base        time.Duration // Run's agent time: since the Unix epoch

	// specs are the pods' CPU resources as their spec gives them (spec.go).
	specs map[top.PodName]map[string]SpecCPU

	replays chan replayJob
	// lookup asks refreshOwners for a lookup before the minute is out: a
	// container was added whose pod or container the names do not know.
	lookup chan struct{}
	// sandboxes are the groups named as pods' sandboxes (not summarised),
	// with the count of reports when each was seen first (as container.since):
	// one that appears asks for a look-up too (a restarted container has a
	// new ID, which the names know once the kubelet posts it).
	sandboxes map[string]int
	// settle and gap are OwnersSettle and OwnersGap (tests shorten them).
	settle, gap time.Duration

	// For the agent's own metrics: whether every cgroup directory was
	// watched at the last report, and the owner look-ups that worked and
	// failed.
	watching                 atomic.Bool
	lookupsOK, lookupsFailed atomic.Int64
	// evaluations counts the views computed (viewOf's advice and
	// evaluations): once per container and fold for the metrics and
	// once more for /advice, however often they are asked for.
	evaluations atomic.Int64
	// unreadable counts the containers whose last UnreadableAfter reports
	// all had an error (Update).
	unreadable atomic.Int64

	// Sampling by need (Config.Hot): whether it is on, the chunks' start
	// (mod Chunk, agent time: the node's grid), the targets' lowest picks
	// are taken for, and the hot containers.
	byNeed  bool
	off     time.Duration
	targets []advise.Target
	hot     hotSet
}

type replayJob struct {
	c     *container
	chunk *Chunk
}

// container is one summarised group.
type container struct {
	path string
	mu   sync.Mutex // guards everything below
	id   top.Identity
	sum  *ContainerSummary
	last top.Stats
	view *View
	// advice is the container's entry in /advice (its View with the full
	// advice, as JSON, deflated) for names adviceNames, computed once per
	// fold (as view) and served until the summary or the settings change.
	advice      []byte
	adviceNames Names
	// since is the agent's count of reports when the container was added:
	// one added by observe since the last report is not dropped for missing
	// from the report that ends its first interval.
	since int
	need  need // sampling by need
	// errReports counts the reports in a row whose row for the container
	// had an error (Update): its summary is kept meanwhile.
	errReports int
}

// New finds the node's cgroup hierarchy and its groups.
func New(cfg Config) (*Agent, error) {
	cfg.defaults()
	if err := cfg.Summary.Check(); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, containers: map[string]*container{}, byPath: map[pathKey]*container{}, collector: top.NewCollector(cfg.Mapping).WithoutStall(),
		replays: make(chan replayJob, 1024), lookup: make(chan struct{}, 1), sandboxes: map[string]int{},
		settle: OwnersSettle, gap: OwnersGap, byNeed: cfg.byNeed()}
	for _, t := range cfg.Targets {
		a.targets = append(a.targets, t.Target)
	}
	// Only the containers it summarises are read every 10 ms (by need:
	// those that are hot; the others on the grid); the pods' groups, their
	// sandboxes, the QoS classes and the system's are read at their first
	// sample (observe sees sandboxes appear) and at reports.
	opts := top.Options{Root: cfg.Root, SampleEvery: cfg.SampleEvery, Mapping: cfg.Mapping, Observe: a.observe, Every: cfg.Select, Open: cfg.open}
	if a.byNeed {
		opts.Coarse = a.onGrid
		opts.SettingsEvery = SettingsEvery
		opts.PerCPU = !cfg.NoPerCPU // percpu.go
		// v1 cpu.stat only where nr_throttled can have moved: what the
		// summaries and the hot triggers take from it is the same
		opts.StatByNeed = true
	}
	w, err := top.New(opts)
	if err != nil {
		return nil, err
	}
	a.w = w
	a.watching.Store(w.Unwatched() == nil) // until the first report says again
	return a, nil
}

// Source returns the hierarchy the agent reads.
func (a *Agent) Source() *top.Source { return a.w.Source() }

// onGrid reports whether watcher time at is on the node's coarse grid
// (top.Options.Coarse).
func (a *Agent) onGrid(at time.Duration) bool {
	return a.cfg.Summary.OnGrid(a.base+at, a.off)
}

// observe gets every group's usage at every sample (top.Options.Observe). A
// selected group the agent does not know yet is added here, at its first
// sample after top found it, not at the next report. It says whether the
// container is hot (sampling by need); perCPU is its per-CPU split, read
// while it is hot (percpu.go).
func (a *Agent) observe(path string, id top.Identity, at time.Duration, usageNs, throttled uint64, perCPU []uint64) bool {
	a.mu.Lock()
	if !a.sampled {
		a.firstSample, a.sampled = a.base+at, true
	}
	key := pathKey{unsafe.StringData(path), len(path)}
	c := a.byPath[key]
	if c == nil {
		if c = a.containers[path]; c != nil {
			a.byPath[key] = c
		}
	}
	if c == nil {
		if !a.cfg.Select(id) {
			if id.Sandbox {
				if _, known := a.sandboxes[path]; !known {
					a.sandboxes[path] = a.reports
					if a.base+at > a.firstSample {
						a.askOwners()
					}
				}
			}
			a.mu.Unlock()
			return false // not a container to summarise
		}
		c = a.addContainer(path, id, a.base+at)
	}
	t := a.base + at
	a.mu.Unlock()
	c.mu.Lock()
	if perCPU != nil {
		c.sum.NotePerCPU(t, perCPU) // before the sample it goes with
	}
	chunks := append([]*Chunk(nil), c.sum.AddCounts(t, time.Duration(usageNs), throttled)...) // nil, no allocation, mostly
	starting := t < c.sum.startupUntil
	c.mu.Unlock()
	hot := false
	if a.byNeed {
		want, heat := c.need.wants(&a.cfg.Hot, a.cfg.Summary.Period, t, usageNs, throttled, a.cfg.Summary.OnGrid(t, a.off), starting)
		hot = a.hot.decide(c, want, heat, a.cfg.Hot.Max)
	}
	for _, chunk := range chunks {
		select {
		case a.replays <- replayJob{c, chunk}:
		default:
			a.replay(replayJob{c, chunk}) // the replay worker is behind: do it here (Fold takes chunks in any order)
		}
	}
	return hot
}

// pathKey is a path string's identity, its bytes' address and length
// (Agent.byPath).
type pathKey struct {
	p *byte
	n int
}

// addContainer starts the summary of a selected group seen at agent time
// at, from its checkpoint if there is one; a.mu is held. A container that
// was not there at the agent's first sample is starting (Config.Startup):
// top finds it within 0.1 s of its directory being made (where inotify
// works; else at the next report), before its first process runs. So is
// one there at the first sample but not in a checkpoint written less than
// RecentCheckpoint before: it appeared while the agent was down (or since
// its last checkpoint), and what it has left of its start-up is kept apart
// from the agent's first sample on.
func (a *Agent) addContainer(path string, id top.Identity, at time.Duration) *container {
	c := &container{path: path, id: id, sum: NewSummary(&a.cfg.Summary), since: a.reports}
	if a.byNeed {
		c.sum.SetOffset(a.off) // the node's grid: every chunk on it
	} else {
		c.sum.SetOffset(stagger(path, a.cfg.Summary.Chunk))
	}
	if saved, ok := a.saved[path]; ok {
		c.sum.restore(saved)
		delete(a.saved, path)
		c.need.floor.Store(c.sum.lowestPick(a.targets))
	} else if a.cfg.Startup > 0 && ((a.sampled && at > a.firstSample) || (!a.savedAt.IsZero() && time.Since(a.savedAt) < RecentCheckpoint)) {
		c.sum.SetStartup(at + a.cfg.Startup)
	}
	a.containers[path] = c
	if id.Kind == top.KindContainer && id.PodUID != "" && (id.Pod == "" || id.Container == "") {
		a.askOwners()
	}
	return c
}

// RecentCheckpoint is how old a checkpoint may be for the containers it
// does not hold to be taken as started since (addContainer): a restart, a
// roll-out of the agent, not a node that was down.
const RecentCheckpoint = 10 * time.Minute

// askOwners asks refreshOwners for a look-up soon (Config.Owners set): a
// container appeared that the names do not know.
func (a *Agent) askOwners() {
	if a.cfg.Owners == nil {
		return
	}
	select {
	case a.lookup <- struct{}{}:
	default: // one is asked for already
	}
}

func (a *Agent) replay(j replayJob) {
	r, err := a.cfg.Summary.Replay(j.chunk)
	j.c.mu.Lock()
	defer j.c.mu.Unlock()
	if err != nil {
		j.c.sum.err = err
		a.cfg.Logger.Warn("replay", "cgroup", j.c.path, "err", err)
		return
	}
	j.c.sum.Fold(r)
	j.c.view, j.c.advice = nil, nil // advice is out of date
	if a.byNeed {
		j.c.need.floor.Store(j.c.sum.lowestPick(a.targets))
	}
}

// UnreadableAfter is how many reports in a row with an error in a
// container's row make it unreadable: counted in
// throttlelab_agent_unreadable_containers and logged once. Its summary is
// kept all the same (and its advice served from it, its window no longer
// growing) until top's watcher no longer lists the group: a read error
// is no sign that the group went (the watcher finds a removed group gone
// at its next read, or by its directory's removal), and dropping the
// summary would lose the demand measured before it.
const UnreadableAfter = 6

// Update takes one report of top (every Interval): it adds the groups that
// appeared, drops those that went (top's report no longer lists them), and
// records their settings. A row with an error (a read that failed while
// the group was there) keeps the container's summary and last settings
// (UnreadableAfter).
func (a *Agent) Update(stats []top.Stats, at time.Duration) {
	seen := make(map[string]bool, len(stats))
	all := make(map[string]bool, len(stats))
	var keep []top.Stats
	for _, st := range stats {
		all[st.Path] = true
		if !a.cfg.Select(st.Identity) {
			continue
		}
		if st.Error != "" {
			a.mu.Lock()
			c := a.containers[st.Path]
			if c != nil {
				seen[st.Path] = true // still there: nothing measured is lost
			}
			a.mu.Unlock()
			if c != nil {
				c.mu.Lock()
				if c.errReports++; c.errReports == UnreadableAfter {
					a.cfg.Logger.Warn("container unreadable: its summary is kept until its cgroup goes", "cgroup", st.Path, "reports", c.errReports, "err", st.Error)
				}
				c.mu.Unlock()
			}
			continue // a group never read is added when it is
		}
		keep = append(keep, st)
		seen[st.Path] = true
		a.mu.Lock()
		c := a.containers[st.Path]
		if c == nil {
			c = a.addContainer(st.Path, st.Identity, at)
		}
		a.mu.Unlock()
		c.mu.Lock()
		c.errReports = 0
		if c.view != nil && (!sameCores(c.last.LimitCores, st.LimitCores) || !sameCores(c.last.RequestCores, st.RequestCores) || c.last.BurstCores != st.BurstCores || c.id != st.Identity) {
			c.view, c.advice = nil, nil // settings or names changed: the predictions at "current" too
		}
		c.id, c.last = st.Identity, st
		c.sum.NoteThrottled(at, st.ThrottledPeriods)
		c.mu.Unlock()
	}
	a.mu.Lock()
	unreadable := int64(0)
	for p, c := range a.containers {
		c.mu.Lock()
		if c.errReports >= UnreadableAfter {
			unreadable++
		}
		c.mu.Unlock()
		if !seen[p] && c.since < a.reports {
			delete(a.containers, p) // gone: its summary goes with it
			clear(a.byPath)
			a.hot.drop(c)
		}
	}
	for p, since := range a.sandboxes {
		if !all[p] && since < a.reports {
			delete(a.sandboxes, p) // gone (one seen since the last report may not be in this one yet)
		}
	}
	a.reports++
	a.mu.Unlock()
	a.unreadable.Store(unreadable)
	a.collector.Update(keep)
	a.watching.Store(a.w.Unwatched() == nil)
}

// Run samples until ctx ends: top's watcher every SampleEvery, a report
// every Interval, chunks replayed by a worker, advice recomputed after each
// chunk.
func (a *Agent) Run(ctx context.Context) error {
	defer a.w.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case j := <-a.replays:
				a.replay(j)
			}
		}
	})
	wg.Go(func() { a.refreshOwners(ctx) })
	lastSave := time.Now()
	a.start = time.Now()
	a.mu.Lock()
	// Agent time is wall-clock time since the epoch: chunks and blocks fall
	// on the clock's minutes and hours, and a checkpoint's blocks line up
	// with the next run's.
	a.base = time.Duration(a.start.UnixNano())
	if a.byNeed {
		// The chunks start at a.start (mod Chunk), so that the grid's
		// instants are the watcher's.
		a.off = a.base % a.cfg.Summary.Chunk
	}
	a.mu.Unlock()
	unwatched := ""
	noteUnwatched := func() {
		if err := a.w.Unwatched(); err != nil && err.Error() != unwatched {
			a.cfg.Logger.Warn("new containers are found at each refresh interval, not as their cgroups are made", "err", err)
			unwatched = err.Error()
		}
	}
	noteUnwatched()
	err := a.w.RunFrom(ctx, a.start, a.cfg.Interval, func(stats []top.Stats) bool {
		a.Update(stats, a.base+time.Since(a.start))
		noteUnwatched()
		if a.cfg.StateDir != "" && time.Since(lastSave) >= a.cfg.SaveEvery {
			if err := a.SaveState(a.cfg.StateDir); err != nil {
				a.cfg.Logger.Warn("checkpoint", "err", err)
			}
			lastSave = time.Now()
		}
		return true
	})
	if a.cfg.StateDir != "" {
		if err := a.SaveState(a.cfg.StateDir); err != nil {
			a.cfg.Logger.Warn("checkpoint", "err", err)
		}
	}
	cancel()
	wg.Wait()
	return err
}

// OwnersSettle is how long after a container the names do not know is
// found the agent asks the API again (its cgroup is made before the kubelet
// posts its status, which names it); OwnersGap is the least time between
// two such look-ups. Containers named neither way wait for the minute's.
const (
	OwnersSettle = 2 * time.Second
	OwnersGap    = 10 * time.Second
)

// refreshOwners reads the pods' owners and names at start and every minute,
// and soon after a container they do not name appears.
func (a *Agent) refreshOwners(ctx context.Context) {
	if a.cfg.Owners == nil {
		return
	}
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		a.lookupOwners(ctx)
		last := time.Now()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.lookup:
			wait := time.NewTimer(max(a.settle, a.gap-time.Since(last)))
			select {
			case <-ctx.Done():
				wait.Stop()
				return
			case <-wait.C:
			}
		}
	}
}

// lookupOwners asks Config.Owners once and keeps what it says: the owners,
// and the names for top's watcher (used from its next discovery).
func (a *Agent) lookupOwners(ctx context.Context) {
	o, err := a.cfg.Owners(ctx)
	if err != nil {
		a.lookupsFailed.Add(1)
		a.cfg.Logger.Warn("owner lookup", "err", err)
		return
	}
	a.lookupsOK.Add(1)
	a.mu.Lock()
	a.owners, a.specs = o.Owners, o.Spec
	a.mu.Unlock()
	if o.Names != nil {
		a.w.SetNames(o.Names)
	}
}

// Names are a container's labels.
type Names struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Container string `json:"container"`
	OwnerKind string `json:"owner_kind"`
	OwnerName string `json:"owner_name"`
	Cgroup    string `json:"cgroup"`
}

// namesOf labels a group: Kubernetes names where the kubelet's log
// directories gave them, else the pod UID and container ID from the cgroup
// path, else the group's name.
func namesOf(path string, id top.Identity, owners map[top.PodName]Owner) Names {
	n := Names{Namespace: id.Namespace, Pod: id.Pod, Container: id.Container, Cgroup: path}
	if n.Pod == "" {
		n.Pod = id.PodUID
	}
	if n.Container == "" {
		n.Container = id.ContainerID
		if n.Container == "" {
			n.Container = id.Name
		}
	}
	if o, ok := owners[top.PodName{Namespace: id.Namespace, Name: id.Pod}]; ok && id.Pod != "" {
		n.OwnerKind, n.OwnerName = o.Kind, o.Name
	}
	return n
}

// View is one container's current settings, advice and predictions.
type View struct {
	Names
	LimitMilli    int64   `json:"limit_milli"`
	RequestMilli  int64   `json:"request_milli"`
	BurstMilli    int64   `json:"burst_milli"`
	KrrMilli      int64   `json:"krr_milli"`
	VPAMilli      int64   `json:"vpa_milli"`
	WindowSeconds float64 `json:"window_seconds"`
	// CPUsUsed is the most CPUs the container ran on over a chunk (each
	// with 2% or more of its CPU time), from the per-CPU counters read
	// while it was hot; 0 where none were read (ContainerSummary.CPUs).
	CPUsUsed int `json:"cpus_used,omitempty"`
	// Advice is for the first target, as advise --json prints it.
	Advice *advise.Advice `json:"advice"`
	// Why is set when there is no advice yet.
	Why string `json:"why,omitempty"`
	// Startup is the container's start-up, kept apart from the advice
	// (Config.Startup); nil when the agent did not see it start.
	Startup *Startup `json:"startup,omitempty"`

	hasLimit, hasRequest bool
	advised, stationary  bool // there is advice; its window is stationary
	perTarget            []advise.Recommendation
	at                   map[string]*advise.Evaluation // current, advised, krr, vpa
	audit                *advise.Audit                 // the advice's self-audit at the current limit
}

// Startup is what a container's start-up asked for and what limits would
// do to it.
type Startup struct {
	Seconds      float64 `json:"seconds"`
	MeanCores    float64 `json:"mean_cores"`
	MaxCores10ms float64 `json:"max_cores_10ms"`
	// AtAdvised and AtCurrent replay the start-up alone at the advised and
	// the current limit.
	AtAdvised *advise.Evaluation `json:"at_advised,omitempty"`
	AtCurrent *advise.Evaluation `json:"at_current,omitempty"`
}

// startupOf describes c's start-up; c.mu is held.
func startupOf(c *container, v *View) *Startup {
	b := c.sum.Startup()
	if b == nil || b.Span <= 0 {
		return nil
	}
	st := &Startup{Seconds: b.Span.Seconds(), MeanCores: b.Work / float64(b.Span), MaxCores10ms: b.MaxCores}
	if v.Advice != nil {
		st.AtAdvised = c.sum.StartupEvaluation(v.Advice.Recommendation.LimitMilli, v.Advice.Recommendation.BurstMilli)
	}
	if v.hasLimit {
		st.AtCurrent = c.sum.StartupEvaluation(v.LimitMilli, v.BurstMilli)
	}
	return st
}

// stagger is a container's chunk offset: its path's hash, in whole
// 100 ms steps of the chunk.
func stagger(path string, chunk time.Duration) time.Duration {
	h := fnv.New32a()
	h.Write([]byte(path))
	steps := max(int64(chunk/(100*time.Millisecond)), 1)
	return time.Duration(int64(h.Sum32())%steps) * 100 * time.Millisecond
}

func sameCores(a, b *float64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func milliOfCores(c *float64) (int64, bool) {
	if c == nil {
		return 0, false
	}
	return int64(*c*1000 + 0.5), true
}

// viewOf returns c's view; c.mu is held. The view c keeps (for the
// metrics, until its summary changes) has no Advice: the full advice of
// every container (every point evaluated, the window's blocks) would be a
// tenth of the agent's memory on a node of 200 (BenchmarkAgentDay200), and
// only /advice shows it, so full computes it anew.
func (a *Agent) viewOf(c *container, owners map[top.PodName]Owner, full bool) *View {
	if c.view != nil && !full {
		c.view.Names = namesOf(c.path, c.id, owners)
		return c.view
	}
	a.evaluations.Add(1)
	v := &View{Names: namesOf(c.path, c.id, owners), at: map[string]*advise.Evaluation{}}
	v.LimitMilli, v.hasLimit = milliOfCores(c.last.LimitCores)
	v.RequestMilli, v.hasRequest = milliOfCores(c.last.RequestCores)
	v.BurstMilli = int64(c.last.BurstCores*1000 + 0.5)
	span, _ := c.sum.Span()
	v.WindowSeconds = span.Seconds()
	v.CPUsUsed = c.sum.CPUs()
	rec := c.sum.Recommenders()
	v.KrrMilli, v.VPAMilli = rec.KrrMilli, rec.VPAMilli
	targets := make([]advise.Target, len(a.cfg.Targets))
	for i, t := range a.cfg.Targets {
		targets[i] = t.Target
	}
	advs, err := c.sum.AdviceFor(AdviceInput{Source: "agent " + a.cfg.Node + ":" + c.path, LimitMilli: v.LimitMilli}, targets)
	if err != nil {
		v.Why = err.Error()
	} else {
		v.Advice, v.advised, v.stationary = advs[0], true, advs[0].Window.Stationary
		v.audit = advs[0].Audit
		for _, adv := range advs {
			r := adv.Recommendation
			if r.WithBurst != nil { // a copy: the pointer holds all the advice's evaluations
				wb := *r.WithBurst
				r.WithBurst = &wb
			}
			v.perTarget = append(v.perTarget, r)
		}
	}
	if v.Advice != nil {
		eval := func(name string, limit, burst int64) {
			if limit <= 0 {
				return
			}
			if e, err := c.sum.Evaluate(limit, burst); err == nil {
				v.at[name] = &e
			}
		}
		if v.hasLimit {
			eval("current", v.LimitMilli, v.BurstMilli)
		}
		r := v.Advice.Recommendation.Evaluation
		v.at["advised"] = &r
		eval("krr", v.KrrMilli, 0)
		eval("vpa", v.VPAMilli, 0)
	}
	v.Startup = startupOf(c, v)
	kept := *v
	kept.Advice = nil
	c.view = &kept
	if full {
		return v
	}
	return c.view
}

// Views returns every container's view with its full advice (computed
// anew), sorted by namespace, pod, container.
func (a *Agent) Views() []*View {
	var out []*View
	a.eachView(true, func(v *View) error { out = append(out, v); return nil })
	return out
}

// views returns the views without Advice (the metrics need none of it),
// recomputed only for containers whose summary changed, sorted as Views.
func (a *Agent) views() []*View {
	var out []*View
	a.eachView(false, func(v *View) error { out = append(out, v); return nil })
	return out
}

// eachView calls fn with every container's view in Views' order, until fn
// fails; with full, the view has its Advice. Each view is computed as fn
// is called, so that /advice holds one container's full advice at a time,
// not a node's.
func (a *Agent) eachView(full bool, fn func(*View) error) error {
	return a.eachContainer(func(c *container, owners map[top.PodName]Owner, _ Names) error {
		return fn(a.viewOf(c, owners, full))
	})
}

// eachAdvice calls fn with every container's entry in /advice (its full
// view as JSON, indented for the document), in Views' order, until fn
// fails. An entry is computed once per fold (and when the container's
// settings or names change) and kept, compressed (the JSON of a day's
// advice is tens of KiB a container: BenchmarkAgentDay200), until then:
// requests between folds are served what the last one computed. fn must
// not keep the bytes.
func (a *Agent) eachAdvice(fn func([]byte) error) error {
	var buf bytes.Buffer
	return a.eachContainer(func(c *container, owners map[top.PodName]Owner, n Names) error {
		buf.Reset()
		if c.advice == nil || c.adviceNames != n {
			b, err := json.MarshalIndent(a.viewOf(c, owners, true), "    ", "  ")
			if err != nil {
				return err
			}
			var z bytes.Buffer
			w, _ := flate.NewWriter(&z, flate.BestSpeed)
			w.Write(b)
			w.Close()
			c.advice, c.adviceNames = bytes.Clone(z.Bytes()), n
			return fn(b)
		}
		if _, err := buf.ReadFrom(flate.NewReader(bytes.NewReader(c.advice))); err != nil {
			return err
		}
		return fn(buf.Bytes())
	})
}

// eachContainer calls fn with every container, its mutex held, in Views'
// order (by namespace, pod, container and cgroup path), until fn fails.
func (a *Agent) eachContainer(fn func(c *container, owners map[top.PodName]Owner, n Names) error) error {
	a.mu.Lock()
	type entry struct {
		c *container
		n Names
	}
	es := make([]entry, 0, len(a.containers))
	for _, c := range a.containers {
		c.mu.Lock() // Update sets id under it
		id := c.id
		c.mu.Unlock()
		es = append(es, entry{c, namesOf(c.path, id, a.owners)})
	}
	owners := a.owners
	a.mu.Unlock()
	sort.Slice(es, func(i, j int) bool {
		x, y := es[i].n, es[j].n
		if x.Namespace != y.Namespace {
			return x.Namespace < y.Namespace
		}
		if x.Pod != y.Pod {
			return x.Pod < y.Pod
		}
		if x.Container != y.Container {
			return x.Container < y.Container
		}
		return x.Cgroup < y.Cgroup
	})
	for _, e := range es {
		e.c.mu.Lock()
		err := fn(e.c, owners, e.n)
		e.c.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// ErrNoContainer marks a lookup that matches no container.
var ErrNoContainer = errors.New("no such container")

// Evaluate evaluates a limit and burst for the container named so.
func (a *Agent) Evaluate(namespace, pod, name string, limitMilli, burstMilli int64) (advise.Evaluation, error) {
	a.mu.Lock()
	var found []*container
	for _, c := range a.containers {
		c.mu.Lock()
		n := namesOf(c.path, c.id, nil)
		c.mu.Unlock()
		if n.Namespace == namespace && n.Pod == pod && n.Container == name {
			found = append(found, c)
		}
	}
	a.mu.Unlock()
	switch len(found) {
	case 0:
		return advise.Evaluation{}, fmt.Errorf("%w %s/%s/%s on this node: see /advice for the names", ErrNoContainer, namespace, pod, name)
	case 1:
	default:
		return advise.Evaluation{}, fmt.Errorf("%s/%s/%s names %d groups on this node", namespace, pod, name, len(found))
	}
	c := found[0]
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sum.Evaluate(limitMilli, burstMilli)
}

// Node returns the node's name.
func (a *Agent) Node() string { return a.cfg.Node }

// Targets returns the configured targets.
func (a *Agent) Targets() []NamedTarget { return a.cfg.Targets }

// Sample reads every group once at agent time at (Run does it every
// SampleEvery).
func (a *Agent) Sample(at time.Duration) { a.w.Sample(at) }

// Report closes top's interval at the last sample, updates the containers
// from it and picks up groups that appeared (Run does it every Interval).
func (a *Agent) Report(at time.Duration) error {
	a.Update(a.w.Report(), at)
	return a.w.Discover()
}

// Drain replays the chunks waiting for the replay worker, here.
func (a *Agent) Drain() {
	for {
		select {
		case j := <-a.replays:
			a.replay(j)
		default:
			return
		}
	}
}

// Close closes the counter files (Run closes them when it returns).
func (a *Agent) Close() error { return a.w.Close() }
