package agent

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/watch"
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
	// ProcRoot is the root processes' /proc is read under for their
	// runtime ("": Root; agent.ProcRoot).
	ProcRoot string
	// Node is the node's name (the node label).
	Node string
	// SampleEvery is the sampling interval (default 10 ms); Interval how
	// often settings, watch's metrics and the containers are refreshed
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
	Select func(watch.Identity) bool
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
	// StartupShare is how much longer than unlimited a start-up may take
	// under its boost (default startup.DefaultShare, 10%).
	StartupShare float64
	// Hot is sampling by need: which containers are read every SampleEvery,
	// the others every period on the node's grid.
	Hot HotConfig
	// NoPerCPU leaves out the per-CPU split of hot containers (percpu.go):
	// their chunks replay without the kernel's per-CPU slices.
	NoPerCPU bool

	// open opens the watcher's counter files (nil: cgroup's; tests wrap
	// it to fail reads).
	open cgroup.OpenFunc
	// takeIdle takes every sample at once, idle or not (observe holds
	// idle ones for catchUp; tests compare the two).
	takeIdle bool
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
		c.Targets = []NamedTarget{{Name: TargetName(advise.DefaultTarget()), Target: advise.DefaultTarget().WithDefaults()}}
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
func DefaultSelect(id watch.Identity) bool {
	return (id.Kind == watch.KindContainer && id.PodUID != "" && !id.Sandbox) || (id.Kind == watch.KindThrottlelab && strings.Count(id.Name, "/") >= 2)
}

// Agent keeps a summary per container of a node and serves advice from
// them.
type Agent struct {
	cfg       Config
	w         *watch.Watcher
	collector *watch.Collector
	start     time.Time

	mu         sync.Mutex
	containers map[string]*container // by cgroup path
	// byID finds a container by the watcher's ID of its group
	// (watch.Sample.ID), the same at every sample: hashing an integer, not
	// the path's hundred-odd bytes, at thousands of samples a second
	// (observe). Cleared whenever a container goes (a group opened again
	// has a new ID: found by its path once more).
	byID    map[watch.GroupID]*container
	owners  map[watch.PodName]Owner
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

	// podGroups are the pods' own groups with a pod-level limit, by
	// cgroup path (pod.go): summarised as containers are.
	podGroups map[string]bool
	// specs are the pods' CPU resources as their spec gives them (spec.go).
	specs map[watch.PodName]map[string]SpecCPU

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
	id   watch.Identity
	sum  *ContainerSummary
	last watch.Stats
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
	rt         *runtimeRead // its runtime, read at discovery and on exec (runtime.go)
	// Sampling by need's idle samples (observe): the counters of its last
	// sample (obsHave: there was one), and the agent times of the samples
	// that found them unchanged, not taken yet (catchUp); startupUntil is
	// its summary's, as of its last sample taken. Only the sampling
	// goroutine touches them.
	obsHave                bool
	obsUsage, obsThrottled uint64
	pending                []time.Duration
	startupUntil           time.Duration
	// rtUsageSeconds is its usage at the report that last read or checked
	// rt (runtimeUnchanged).
	rtUsageSeconds float64
}

// New finds the node's cgroup hierarchy and its groups.
func New(cfg Config) (*Agent, error) {
	cfg.defaults()
	if err := cfg.Summary.Check(); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, containers: map[string]*container{}, byID: map[watch.GroupID]*container{}, collector: watch.NewCollector(cfg.Mapping).WithoutStall(),
		replays: make(chan replayJob, 1024), lookup: make(chan struct{}, 1), sandboxes: map[string]int{},
		settle: OwnersSettle, gap: OwnersGap, byNeed: cfg.byNeed()}
	for _, t := range cfg.Targets {
		a.targets = append(a.targets, t.Target)
	}
	// Only the containers it summarises are read every 10 ms (by need:
	// those that are hot; the others on the grid); the pods' groups, their
	// sandboxes, the QoS classes and the system's are read at their first
	// sample (observe sees sandboxes appear) and at reports.
	opts := watch.Options{Root: cfg.Root, SampleEvery: cfg.SampleEvery, Mapping: cfg.Mapping, ByNeed: watch.ByNeed{Policy: policy{a}}, Open: cfg.open}
	if a.byNeed {
		opts.ByNeed.Coarse = true
		opts.ByNeed.SettingsEvery = SettingsEvery
		opts.ByNeed.PerCPU = !cfg.NoPerCPU // percpu.go
		// v1 cpu.stat only where nr_throttled can have moved: what the
		// summaries and the hot triggers take from it is the same
		opts.ByNeed.Stat = true
	}
	w, err := watch.New(opts)
	if err != nil {
		return nil, err
	}
	a.w = w
	a.watching.Store(w.Unwatched() == nil) // until the first report says again
	return a, nil
}

// Source returns the hierarchy the agent reads.
func (a *Agent) Source() *watch.Source { return a.w.Source() }

// Run samples until ctx ends: the watcher every SampleEvery, a report
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
	err := a.w.RunFrom(ctx, a.start, a.cfg.Interval, func(stats []watch.Stats) bool {
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
	a.catchUpAll() // the samples held since the last report, before the checkpoint
	if a.cfg.StateDir != "" {
		if err := a.SaveState(a.cfg.StateDir); err != nil {
			a.cfg.Logger.Warn("checkpoint", "err", err)
		}
	}
	cancel()
	wg.Wait()
	return err
}

// Node returns the node's name.
func (a *Agent) Node() string { return a.cfg.Node }

// Targets returns the configured targets.
func (a *Agent) Targets() []NamedTarget { return a.cfg.Targets }

// Sample reads every group once at agent time at (Run does it every
// SampleEvery).
func (a *Agent) Sample(at time.Duration) { a.w.Sample(at) }

// Close closes the counter files (Run closes them when it returns).
func (a *Agent) Close() error { return a.w.Close() }
