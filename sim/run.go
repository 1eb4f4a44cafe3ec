package sim

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/units"
	"github.com/throttlelab/throttlelab/workload"
)

// Options control a simulated experiment.
type Options struct {
	// Cores is the simulated machine's CPU count.
	Cores int
	// Costs turn requests into CPU time (DefaultCosts if zero).
	Costs Costs
	// SMT pairs the CPUs as hyperthreads (see Params.SMT).
	SMT bool
	// Log receives one line per run, and how fast the simulation went.
	Log io.Writer
	// RepeatSeeds, when set, seeds each repeat as a measurement was seeded
	// (RecordedSeeds), so a simulation replays its arrivals and picks;
	// repeats it lacks use experiment.RepeatSeed.
	RepeatSeeds map[int]uint64
	// LoadGenInRoot models the load generator as a process in the root
	// group, each of its threads weighing 1024 against the experiment's
	// groups together, as runs recorded before it had a group of its own
	// ran (their env.json has no loadgen_group). Otherwise it is a group
	// beside the experiment's subtree with experiment.LoadGenShares.
	LoadGenInRoot bool
}

// seed is the seed of run r: the recorded one when replaying a
// measurement, else its repeat's (experiment.RepeatSeed).
func (o Options) seed(e *experiment.Experiment, r experiment.Run) uint64 {
	if s, ok := o.RepeatSeeds[r.Repeat]; ok && s != 0 {
		return s
	}
	return e.Seed(r)
}

// slot is a run's place among the runs of one repeat: loads in the spec's
// order, configs within each.
func slot(e *experiment.Experiment, r experiment.Run) int {
	li, ci := 0, 0
	for i, l := range e.Spec.Loads {
		if l.Name == r.Load.Name {
			li = i
		}
	}
	for i, c := range e.Spec.Configs {
		if c.Name == r.Config.Name {
			ci = i
		}
	}
	return li*len(e.Spec.Configs) + ci
}

// RecordedSeeds returns the seed each repeat of a measurement used, as its
// runs' load summaries recorded it (results from before per-repeat seeds
// used the spec's seed in every repeat).
func RecordedSeeds(runs []*record.Run) map[int]uint64 {
	out := map[int]uint64{}
	for _, r := range runs {
		switch {
		case r.Seed != 0:
			out[r.Repeat] = r.Seed
		case r.Summary != nil && r.Summary.Seed != 0:
			out[r.Repeat] = r.Summary.Seed
		}
	}
	return out
}

// Epoch is the simulated clock's origin: results carry times from it, so the
// same spec and seed give the same bytes.
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Info is sim.json: how the results were simulated.
type Info struct {
	Cores  int    `json:"cores"`
	Params Params `json:"params"`
	Costs  Costs  `json:"costs"`
	// Events is the number of events handled over all runs.
	Events uint64 `json:"events"`
	// SimulatedSec is the simulated time over all runs.
	SimulatedSec float64 `json:"simulated_sec"`
}

// Simulate simulates run of e in memory and returns what it measured,
// writing nothing: the model for callers that need the figures, not a
// results directory (map, advise). The same seed gives the same figures as
// the backend's Run writes.
func Simulate(ctx context.Context, e *experiment.Experiment, run experiment.Run, opt Options) (*record.Run, error) {
	b := NewBackend(opt)
	if _, err := b.Prepare(ctx, e); err != nil {
		return nil, err
	}
	return b.Simulate(ctx, run)
}

// Backend is the simulator as a backend of the runner (package runner): each
// run is simulated on a fresh machine of Options.Cores CPUs, with its repeat's
// seed (experiment.RepeatSeed), so the same spec gives the same bytes.
type Backend struct {
	opt     Options
	e       *experiment.Experiment
	cat     *workload.Catalog
	rc      *requestCache
	info    *Info
	started time.Time
	// next are the runs simulated ahead, in the experiment's order, on
	// the other CPUs while the runner writes and moves the current one.
	next []*prefetch
	// slots holds one token per simulation that may run at once (the
	// CPUs): a run simulated ahead waits for one.
	slots chan struct{}
}

// prefetch is one run simulated ahead into a staging directory beside the
// runs' own.
type prefetch struct {
	index  int
	dir    string
	done   chan struct{}
	rs     *record.Run
	events uint64
	err    error
}

// NewBackend returns the simulator backend.
func NewBackend(opt Options) *Backend {
	if opt.Costs == (Costs{}) {
		opt.Costs = DefaultCosts()
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	return &Backend{opt: opt, rc: newRequestCache(), info: &Info{Cores: opt.Cores, Params: opt.params(), Costs: opt.Costs}}
}

// Name is "sim".
func (b *Backend) Name() string { return "sim" }

// Info is what was simulated so far: sim.json.
func (b *Backend) Info() *Info { return b.info }

// Prepare checks the machine and describes it.
func (b *Backend) Prepare(_ context.Context, e *experiment.Experiment) (record.Env, error) {
	if b.opt.Cores < 1 {
		return record.Env{}, fmt.Errorf("cores %d: the simulated machine needs at least one", b.opt.Cores)
	}
	b.e, b.started = e, time.Now()
	if e.Spec.Workload.Request == string(loadgen.KindTile) {
		var err error
		if b.cat, err = workload.DefaultCatalog(); err != nil {
			return record.Env{}, err
		}
	}
	return record.Env{Hostname: "simulator", Kernel: "CFS bandwidth model", CgroupMode: "simulated", CPUController: "sim",
		BurstSupport: true, CPUModel: "simulated", Cores: b.opt.Cores, Started: Epoch,
		BurnIterationsPerMs: b.opt.Costs.BurnIterationsPerMs,
		ThrottleModel:       &record.ThrottleModel{CPUController: "sim", BurstSupported: true, DefaultPeriodUsec: 100000, SliceUsec: 5000},
		LoadGen:             b.loadGen()}, nil
}

// loadGen is the load generator's group as the simulation models it (nil:
// in the root group).
func (b *Backend) loadGen() *record.LoadGenGroup {
	if b.opt.LoadGenInRoot {
		return nil
	}
	return &record.LoadGenGroup{Path: "throttlelab-loadgen-RUN", Shares: experiment.LoadGenShares, Weight: experiment.LoadGenWeight}
}

// Run simulates one run and writes its files into dir. With more than one
// CPU, the runs that follow in the experiment's order are simulated ahead,
// as many at once as there are CPUs, while this one is handed over (each
// run is seeded on its own, so the bytes are the same either way); a run
// asked for out of that order (a resumed experiment) is simulated then.
func (b *Backend) Run(ctx context.Context, run experiment.Run, dir string) (*record.Run, error) {
	var p *prefetch
	if len(b.next) > 0 && b.next[0].index == run.Index {
		p, b.next = b.next[0], b.next[1:]
	} else {
		for _, q := range b.next {
			b.drop(q)
		}
		b.next = nil
	}
	b.ahead(ctx, run, dir)
	if p == nil {
		return b.run(ctx, run, record.NewRunWriter(dir, run.Index))
	}
	<-p.done
	defer os.RemoveAll(p.dir)
	if p.err != nil {
		return nil, p.err
	}
	files, err := os.ReadDir(p.dir)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := os.Rename(filepath.Join(p.dir, f.Name()), filepath.Join(dir, f.Name())); err != nil {
			return nil, err
		}
	}
	b.info.Events += p.events
	b.info.SimulatedSec += p.rs.Seconds
	return p.rs, nil
}

// ahead starts simulating the runs after run (in the experiment's order)
// into staging directories beside dir, up to one for each CPU: alternating
// configs take unequal times (a limited run takes longer than an unlimited
// one), and with one run ahead a CPU waited idle for the longer one. Each
// waits for a slot (a CPU) before it simulates.
func (b *Backend) ahead(ctx context.Context, run experiment.Run, dir string) {
	procs := runtime.GOMAXPROCS(0)
	if procs < 2 {
		return
	}
	if b.slots == nil {
		b.slots = make(chan struct{}, procs)
	}
	runs := b.e.Runs()
	last := run.Index
	if len(b.next) > 0 {
		last = b.next[len(b.next)-1].index
	}
	for i := 0; i+1 < len(runs) && len(b.next) < procs; i++ {
		if runs[i].Index != last {
			continue
		}
		nr := runs[i+1]
		p := &prefetch{index: nr.Index, dir: filepath.Join(filepath.Dir(dir), fmt.Sprintf(".sim-ahead-%03d", nr.Index)), done: make(chan struct{})}
		if err := os.MkdirAll(p.dir, 0o755); err != nil {
			return // simulated when asked for
		}
		b.next = append(b.next, p)
		go func() {
			defer close(p.done)
			b.slots <- struct{}{}
			defer func() { <-b.slots }()
			p.rs, p.events, p.err = simulate(ctx, b.e, nr, b.opt, b.cat, b.rc, record.NewRunWriter(p.dir, nr.Index))
		}()
		last = nr.Index
	}
}

// drop waits for a run simulated ahead and removes what it wrote.
func (b *Backend) drop(p *prefetch) {
	<-p.done
	os.RemoveAll(p.dir)
}

// Simulate simulates one run of the prepared experiment in memory and
// writes nothing.
func (b *Backend) Simulate(ctx context.Context, run experiment.Run) (*record.Run, error) {
	return b.run(ctx, run, record.NewRunWriter("", run.Index))
}

func (b *Backend) run(ctx context.Context, run experiment.Run, rw *record.RunWriter) (*record.Run, error) {
	rs, events, err := simulate(ctx, b.e, run, b.opt, b.cat, b.rc, rw)
	if err != nil {
		return nil, err
	}
	b.info.Events += events
	b.info.SimulatedSec += rs.Seconds
	return rs, nil
}

// Finish writes sim.json and logs how fast the simulation went.
func (b *Backend) Finish(dir string) error {
	wall := time.Since(b.started)
	fmt.Fprintf(b.opt.Log, "simulated %.1f s in %.2f s (%d events, %.1f M events/s)\n", b.info.SimulatedSec, wall.Seconds(), b.info.Events, float64(b.info.Events)/wall.Seconds()/1e6)
	return record.WriteJSON(filepath.Join(dir, record.SimFile), b.info)
}

// Close waits for the runs simulated ahead that were not asked for (the
// experiment was interrupted) and removes them.
func (b *Backend) Close() error {
	for _, p := range b.next {
		b.drop(p)
	}
	b.next = nil
	return nil
}

func (o Options) params() Params {
	p := DefaultParams(o.Cores)
	p.SMT = o.SMT
	p.RootGroup = !o.LoadGenInRoot
	return p
}

// procsOf is the GOMAXPROCS an instance resolves, as the server does: host
// CPUs, N, or the limit rounded up (within its cpuset).
func procsOf(p units.GOMAXPROCS, cores int, s cgroup.Settings, cpus []int) int {
	avail := cores
	if len(cpus) > 0 {
		avail = len(cpus)
	}
	limit := 0.0
	if s.QuotaUsec > 0 && s.PeriodUsec > 0 {
		limit = float64(s.QuotaUsec) / float64(s.PeriodUsec)
	}
	n, _ := p.Resolve(cores, avail, limit)
	return n
}

// groupOf makes a group with cgroup settings; its period timer starts at a
// random phase.
func groupOf(m *Machine, name string, s cgroup.Settings, rng *rand.Rand) (*Group, []int, error) {
	var cpus []int
	if s.Cpus != "" {
		var err error
		if cpus, err = cgroup.ParseCPUList(s.Cpus); err != nil {
			return nil, nil, fmt.Errorf("cpuset %q: %w", s.Cpus, err)
		}
		for _, c := range cpus {
			if c >= m.Cores() {
				return nil, nil, fmt.Errorf("cpuset %q: CPU %d does not exist on a %d-core machine: simulate %d cores or more", s.Cpus, c, m.Cores(), c+1)
			}
		}
	}
	period := time.Duration(s.PeriodUsec) * time.Microsecond
	if period == 0 {
		period = 100 * time.Millisecond
	}
	var quota time.Duration
	if s.QuotaUsec > 0 {
		quota = time.Duration(s.QuotaUsec) * time.Microsecond
	}
	phase := time.Duration(rng.Int64N(int64(period)))
	shares := s.Shares
	if shares == 0 {
		shares = 1024
	}
	return m.NewGroup(name, shares, quota, period, time.Duration(s.BurstUsec)*time.Microsecond, cpus, phase), cpus, nil
}

// placed is a run on the simulated machine: its groups (instances, then
// neighbours, in the run writer's order), the instances' servers, the burst
// neighbours and the probe.
type placed struct {
	groups  []*Group
	servers []*Server
	bursts  []*burstWorker
	probe   *experiment.Neighbour
	pod     *Group // the pod group, or nil
}

// place makes the run's groups on m (named through rw), with their period
// phases drawn from rng, and starts the instances' servers and the
// neighbours; seed is the run's repeat seed.
func place(m *Machine, e *experiment.Experiment, run experiment.Run, opt Options, settings cgroup.Settings, seed uint64, rng *rand.Rand, rw *record.RunWriter, rs *record.Run) (*placed, error) {
	sc := &placed{}
	pod, err := podGroup(m, e, run, seed)
	if err != nil {
		return nil, err
	}
	sc.pod = pod
	for i := 0; i < run.Config.Instances; i++ {
		name := fmt.Sprintf("%s-%d", run.Config.Name, i)
		g, cpus, err := groupOf(m, rw.AddInstance(name), settings, rng)
		if err != nil {
			return nil, err
		}
		if pod != nil {
			m.nest(pod, g)
		}
		procs := procsOf(run.Config.Server.GOMAXPROCS, opt.Cores, settings, cpus)
		sc.servers = append(sc.servers, m.NewServer(name, g, procs, run.Config.Server.Single))
		sc.groups = append(sc.groups, g)
		rs.Instances = append(rs.Instances, name)
	}
	neighbours := e.NeighboursOf(run.Config)
	for i := range neighbours {
		n := &neighbours[i]
		if n.Kind == "probe" {
			sc.probe = n
			continue
		}
		ns, err := e.NeighbourSettings(*n)
		if err != nil {
			return nil, err
		}
		g, _, err := groupOf(m, rw.AddNeighbour(n.Name), ns, rng)
		if err != nil {
			return nil, err
		}
		sc.groups = append(sc.groups, g)
		switch n.Kind {
		case "noise":
			startNoise(m, g, n.Threads)
		case "burst":
			// A burst process starts before the load does, so the load meets
			// it somewhere in its sleep: at a share of it drawn once per
			// repeat (every config and every burst neighbour of a repeat
			// shares it, as they start together). Starting every burst with
			// the load put the first busy phase exactly on an arrival of a
			// steady load, and every later one too when the cycle is a
			// multiple of the interval (F7's probe tail, docs/simulator.md).
			first := time.Duration(burstPhase(seed) * float64(n.Sleep.Duration))
			sc.bursts = append(sc.bursts, startBurst(m, g, n.Name, n.Workers, n.Busy.Duration, n.Sleep.Duration, first, opt.Costs))
		case "server":
			m.NewServer(n.Name, g, opt.Cores, false) // idle: nothing loads it
		}
	}
	return sc, nil
}

// load is a run's load and probe, started on the simulated machine.
type load struct {
	cl, pcl   *client
	col, pcol *loadgen.Collector
}

// startLoad starts the load generator (outside the groups, on any core,
// taking CPU for each response), the load lc and the probe, if any.
func startLoad(m *Machine, lc loadgen.Config, probe *experiment.Neighbour, servers []*Server, opt Options, cat *workload.Catalog, rc *requestCache, rw *record.RunWriter) (*load, error) {
	ld := &load{}
	gen := m.NewGroup("loadgen", experiment.LoadGenShares, 0, 0, 0, nil, 0)
	gen.Root = true
	genProc := m.NewServer("loadgen", gen, opt.Cores, false)
	start := func(c loadgen.Config, file string) (*client, *loadgen.Collector, error) {
		f, err := rw.Create(file)
		if err != nil {
			return nil, nil, err
		}
		col, err := loadgen.NewCollector(c, f)
		if err != nil {
			return nil, nil, err
		}
		cl, err := newClient(c, col, servers, genProc, cat, opt.Costs, rc)
		if err != nil {
			return nil, nil, err
		}
		return cl, col, cl.start(m)
	}
	var err error
	if ld.cl, ld.col, err = start(lc, record.RequestsFile); err != nil {
		return ld, err
	}
	if probe != nil {
		if ld.pcl, ld.pcol, err = start(experiment.ProbeConfig(lc, *probe), record.ProbeFile); err != nil {
			return ld, err
		}
	}
	return ld, nil
}

// simulate performs one run and writes its files through rw (nothing in
// memory: Simulate).
func simulate(ctx context.Context, e *experiment.Experiment, run experiment.Run, opt Options, cat *workload.Catalog, rc *requestCache, rw *record.RunWriter) (*record.Run, uint64, error) {
	m := NewMachine(opt.params())
	// The run's repeat seed (experiment.RepeatSeed), as the load generator's.
	// The groups' period phases come from a stream of that seed numbered by
	// the run's place within its repeat, so each config of a repeat keeps its
	// phases whatever the repeat, and repeat 1 draws what it always drew.
	seed := opt.seed(e, run)
	rng := rand.New(rand.NewPCG(seed, uint64(slot(e, run))+1))
	settings, qos, err := e.Settings(run.Config)
	if err != nil {
		return nil, 0, err
	}
	rs := &record.Run{QoS: qos, Settings: settings, Started: Epoch}
	sc, err := place(m, e, run, opt, settings, seed, rng, rw, rs)
	if err != nil {
		return nil, 0, err
	}
	groups, servers, bursts, probe := sc.groups, sc.servers, sc.bursts, sc.probe

	// The load, as loadgen.Run would drive it, against the simulated servers.
	lc := e.LoadConfig(run.Load)
	lc.Seed = seed
	lc.Targets = rs.Instances
	defer rw.CloseFiles()
	ld, err := startLoad(m, lc, probe, servers, opt, cat, rc, rw)
	if err != nil {
		return nil, 0, err
	}
	cl, col, pcl, pcol := ld.cl, ld.col, ld.pcl, ld.pcol
	// A run written to disk is handed over with its records and samples
	// too, so that the report need not read back what was just written.
	cl.keep = rw.Dir() != ""

	smp, err := newSampler(m, groups, rw)
	if err != nil {
		return nil, 0, err
	}
	defer rw.CloseUsage()
	n := 0
	stopped := false
	m.RunUntil(time.Duration(math.MaxInt64), func() bool {
		if n++; n%4096 == 0 && ctx.Err() != nil {
			stopped = true
			return true
		}
		return cl.done() && (pcl == nil || pcl.done())
	})
	if stopped {
		return nil, 0, ctx.Err()
	}
	end := m.Now()
	smp.sample(m) // the last sample, at the end of the load
	if err := rw.CloseUsage(); err != nil {
		return nil, 0, err
	}
	elapsed := cl.end
	if lc.Duration > 0 {
		elapsed = max(elapsed, lc.Duration)
	}
	res, err := col.Finish(elapsed)
	if err != nil {
		return nil, 0, err
	}
	rs.Summary = res.Summary
	rs.Seconds = end.Seconds()
	if pcol != nil {
		pres, err := pcol.Finish(max(pcl.end, 10*time.Second))
		if err != nil {
			return nil, 0, err
		}
		rs.Probe = pres.Summary
	}
	stats := make([]cgroup.CPUStat, len(groups))
	sets := make([]cgroup.Settings, len(groups))
	for i, g := range groups {
		stats[i], sets[i] = g.CPUStat(m), bandwidthOf(g)
	}
	rw.Assemble(rs, stats, sets)
	if err := writePodGroup(m, sc.pod, run, rs.Seconds, rw); err != nil {
		return nil, 0, err
	}
	for _, b := range bursts {
		if err := b.write(rw); err != nil {
			return nil, 0, err
		}
	}
	if err := rw.CloseFiles(); err != nil {
		return nil, 0, err
	}
	if err := rw.WriteHist(res.Histogram, Epoch); err != nil {
		return nil, 0, err
	}
	if cl.keep {
		rs.Held = rw.Held(cl.kept)
	}
	return rs, m.Events, nil
}

// sampler hands the groups' usage to the run writer every 10 ms of
// simulated time, as the local backend's sampler does.
type sampler struct {
	groups  []*Group
	rw      *record.RunWriter
	usage   []time.Duration
	thr     []uint64
	periods []uint64
}

const sampleEvery = 10 * time.Millisecond

func newSampler(m *Machine, groups []*Group, rw *record.RunWriter) (*sampler, error) {
	if err := rw.StartUsage(); err != nil {
		return nil, err
	}
	s := &sampler{groups: groups, rw: rw}
	m.At(0, s, 0)
	return s, nil
}

func (s *sampler) handle(m *Machine, _ int64) {
	s.sample(m)
	m.At(m.Now()+sampleEvery, s, 0)
}

func (s *sampler) sample(m *Machine) {
	if at, ok := s.rw.LastSampleAt(); ok && at == m.Now() {
		return
	}
	m.AdvanceAll()
	n := len(s.groups)
	if len(s.usage) < n {
		// One sample's room, used again: the writer keeps the figures,
		// not the sample.
		s.usage, s.thr, s.periods = make([]time.Duration, n), make([]uint64, n), make([]uint64, n)
	}
	u := cgroup.UsageSample{At: m.Now(), Usage: s.usage[:n:n], Throttled: s.thr[:n:n], Periods: s.periods[:n:n]}
	for i, g := range s.groups {
		u.Usage[i] = time.Duration(g.UsageNs)
		u.Throttled[i] = g.Stat.ThrottledPeriods
		u.Periods[i] = g.Stat.Periods
	}
	s.rw.Sample(u)
}

// noise is a CPU hog: threads that always have work.
type noise struct{}

func (noise) ChunkDone(m *Machine, t *Thread) { m.SetWork(t, time.Hour) }

func startNoise(m *Machine, g *Group, threads int) {
	for i := 0; i < max(threads, 1); i++ {
		m.Wake(m.NewThread(g, noise{}), time.Hour)
	}
}

// bandwidthOf is g's quota, period and burst as cgroup settings.
func bandwidthOf(g *Group) cgroup.Settings {
	if !g.limited() {
		return cgroup.Settings{QuotaUsec: -1}
	}
	return cgroup.Settings{QuotaUsec: g.Quota.Microseconds(), PeriodUsec: uint64(g.Period.Microseconds()), BurstUsec: uint64(g.Burst.Microseconds())}
}
