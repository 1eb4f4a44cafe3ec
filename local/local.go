package local

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/workload"
)

// Options control the local backend.
type Options struct {
	// Binary is the throttlelab executable started for instances and neighbours.
	Binary string
	// Log receives warnings (groups of a killed run removed).
	Log io.Writer
	// Root is the kernel file system root ("/"), RunID the cgroup subtree name
	// (default NAME-PID).
	Root  string
	RunID string
}

// Backend runs an experiment's runs with real processes in real cgroups: for
// each run it makes the groups with the config's CPU settings, starts the
// server instances and neighbours inside them, drives the load, samples CPU
// use every 10 ms, reads cpu.stat, and stops everything and removes the
// groups. It needs root (or a delegated cgroup subtree).
type Backend struct {
	opt Options
	e   *experiment.Experiment
	m   *cgroup.Manager
	cal workload.BurnCalibration
	lg  *cgroup.Group // the load generator's group
}

// New returns the local backend.
func New(opt Options) *Backend {
	if opt.Root == "" {
		opt.Root = "/"
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	return &Backend{opt: opt}
}

// Name is "local".
func (x *Backend) Name() string { return "local" }

// Prepare makes the experiment's cgroup subtree (after removing the groups a
// killed run left behind), calibrates the burn loop once for every instance
// (so cpu=5ms means the same everywhere) and describes this machine.
func (x *Backend) Prepare(_ context.Context, e *experiment.Experiment) (record.Env, error) {
	x.e = e
	if x.opt.RunID == "" {
		x.opt.RunID = fmt.Sprintf("%s-%d", e.Metadata.Name, os.Getpid())
	}
	withCpuset := false
	for _, c := range e.Spec.Configs {
		withCpuset = withCpuset || !c.CPU.Cpuset.IsZero()
		for _, n := range e.NeighboursOf(c) {
			withCpuset = withCpuset || !n.CPU.Cpuset.IsZero()
		}
	}
	// Groups left by a runner that was killed outright (its instances died with
	// it, through PDEATHSIG, but nobody removed the groups).
	if removed, _ := cgroup.RemoveStale(x.opt.Root); len(removed) > 0 {
		fmt.Fprintf(x.opt.Log, "removed the cgroups of a run that was killed: %s\n", strings.Join(removed, " "))
	}
	m, err := cgroup.NewManager(x.opt.Root, x.opt.RunID, withCpuset)
	if err != nil {
		return record.Env{}, err
	}
	x.m = m
	lgSet := cgroup.Settings{QuotaUsec: -1, Shares: experiment.LoadGenShares, Weight: experiment.LoadGenWeight}
	if x.lg, err = m.NewSideGroup("loadgen", lgSet); err != nil {
		return record.Env{}, fmt.Errorf("the load generator's group: %w", err)
	}
	cal, err := workload.CalibrateBurn(20_000_000, 5)
	if err != nil {
		return record.Env{}, err
	}
	x.cal = cal
	// The calibration is a measurement: the simulator takes the burn speed
	// from it when it is compared with this run.
	env := ReadEnv(m)
	env.BurnIterationsPerMs = cal.IterationsPerMs
	env.LoadGen = &record.LoadGenGroup{Path: x.lg.Dirs["cpu"], Shares: lgSet.Shares, Weight: lgSet.Weight}
	return env, nil
}

// Close removes the experiment's cgroup subtree.
func (x *Backend) Close() error {
	if x.m == nil {
		return nil
	}
	return x.m.Cleanup(true)
}

func (x *Backend) serveArgs(name string, s experiment.Server) []string {
	return s.ServeArgs(name, "127.0.0.1:0", x.cal.IterationsPerMs)
}

// Run performs one run, writing its files into dir. On cancellation it stops
// and removes every process and group it made and returns ctx's error.
func (x *Backend) Run(ctx context.Context, run experiment.Run, dir string) (*record.Run, error) {
	rs := &record.Run{Started: time.Now().UTC()}
	rw := record.NewRunWriter(dir, run.Index)
	settings, qos, err := x.e.Settings(run.Config)
	if err != nil {
		return nil, err
	}
	rs.Settings, rs.QoS = settings, qos
	r, err := x.start(ctx, run, settings, rw, rs)
	defer r.close(rw)
	if err != nil {
		return nil, err
	}

	// The load generator (this process, with its sampler) runs in its own
	// group from the warm-up to the end of the load.
	restore, err := x.lg.AttachSelf()
	if err != nil {
		return nil, fmt.Errorf("moving the load generator into its group: %w", err)
	}
	restored := false
	leave := func() error {
		if restored {
			return nil
		}
		restored = true
		return restore()
	}
	defer leave()

	lc := x.e.RunLoadConfig(run)
	lc.Targets = r.targets
	if err := x.warmUp(ctx, lc); err != nil {
		return nil, err
	}
	res, start, stats, err := x.measure(ctx, r, lc, rw, rs)
	if lerr := leave(); lerr != nil && err == nil {
		err = lerr
	}
	if err != nil {
		return nil, err
	}
	rw.Assemble(rs, stats, r.settings())
	rs.Summary = res.Summary
	// Stop the neighbours now, so what they print is complete before the rename.
	r.stop()
	if err := rw.CloseFiles(); err != nil {
		return nil, err
	}
	if err := rw.WriteHist(res.Histogram, start); err != nil {
		return nil, err
	}
	return rs, nil
}

// running is what a run started: its groups (instances, then neighbours:
// the run writer's order) and their processes.
type running struct {
	groups    []*cgroup.Group
	procs     []*proc
	instances []*proc
	targets   []string
	probe     *experiment.Neighbour
	// pod is the pod-level group the instances are nested in, or nil;
	// runID the run's ID for its record.
	pod   *cgroup.Group
	runID string
}

// stop stops every process.
func (r *running) stop() {
	for _, p := range r.procs {
		p.stop(5 * time.Second)
	}
}

// close stops every process, closes the run's files and removes every
// group: on every path.
func (r *running) close(rw *record.RunWriter) {
	r.stop()
	rw.CloseFiles()
	for _, g := range r.groups {
		g.Remove()
	}
	if r.pod != nil { // after its children
		r.pod.Remove()
	}
}

func (r *running) settings() []cgroup.Settings {
	out := make([]cgroup.Settings, len(r.groups))
	for i, g := range r.groups {
		out[i] = g.Settings
	}
	return out
}

// start makes the run's groups and starts its instances and neighbours in
// them, and waits until the instances answer. What it started is in the
// returned running, also on error, for close.
func (x *Backend) start(ctx context.Context, run experiment.Run, settings cgroup.Settings, rw *record.RunWriter, rs *record.Run) (*running, error) {
	r := &running{runID: run.ID()}
	if run.Config.Pod != nil {
		// The kubelet's nesting: the pod's group holds the pod-level quota,
		// each instance's group inside it its own; both apply.
		ps, err := x.e.PodSettings(run.Config)
		if err != nil {
			return r, err
		}
		if r.pod, err = x.m.NewGroup(fmt.Sprintf("pod-%d-%s", run.Index, run.Config.Name), ps); err != nil {
			return r, fmt.Errorf("the pod group of config %s: %w", run.Config.Name, err)
		}
	}
	for i := 0; i < run.Config.Instances; i++ {
		name := fmt.Sprintf("%s-%d", run.Config.Name, i)
		var g *cgroup.Group
		var err error
		if r.pod != nil {
			g, err = x.m.NewChildGroup(r.pod, rw.AddInstance(name), settings)
		} else {
			g, err = x.m.NewGroup(rw.AddInstance(name), settings)
		}
		if err != nil {
			return r, err
		}
		r.groups = append(r.groups, g)
		p, err := startInGroup(g, name, x.opt.Binary, x.serveArgs(name, run.Config.Server), true, nil)
		if err != nil {
			return r, err
		}
		r.procs, r.instances = append(r.procs, p), append(r.instances, p)
		rs.Instances = append(rs.Instances, name)
	}
	neighbours := x.e.NeighboursOf(run.Config)
	for i := range neighbours {
		n := &neighbours[i]
		if n.Kind == "probe" {
			r.probe = n
			continue
		}
		ns, err := x.e.NeighbourSettings(*n)
		if err != nil {
			return r, err
		}
		g, err := x.m.NewGroup(rw.AddNeighbour(n.Name), ns)
		if err != nil {
			return r, err
		}
		r.groups = append(r.groups, g)
		args := n.ProcessArgs()
		if n.Kind == "server" {
			args = x.serveArgs(n.Name, experiment.NeighbourServer)
		}
		var stdout io.Writer
		if n.Kind == "burst" {
			// One JSON line per cycle: the burst worker's goodput is a measurement.
			f, err := rw.Create(record.BurstFile(n.Name))
			if err != nil {
				return r, err
			}
			stdout = f
		}
		p, err := startInGroup(g, n.Name, x.opt.Binary, args, n.Kind == "server", stdout)
		if err != nil {
			return r, err
		}
		r.procs = append(r.procs, p)
	}
	for _, p := range r.instances {
		if err := p.waitHealthy(ctx); err != nil {
			return r, err
		}
		r.targets = append(r.targets, p.url)
	}
	return r, nil
}

// warmUp drives the spec's warm-up load, if any.
func (x *Backend) warmUp(ctx context.Context, lc loadgen.Config) error {
	if w := x.e.Spec.Warmup.Duration; w > 0 {
		warm := lc
		warm.Duration, warm.Requests = w, 0
		if warm.Mode == loadgen.ModeRamp {
			// One step at the top of the ramp, whatever the requests are.
			warm.Ramp.From, warm.RampStep = warm.Ramp.To, w
		}
		if _, err := loadgen.Run(ctx, warm); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	return ctx.Err()
}

// measure drives the load (and the probe) while sampling every group, and
// returns the load's result, when it started and each group's cpu.stat
// over it; it fills rs's duration, probe summary and the host's other work.
func (x *Backend) measure(ctx context.Context, r *running, lc loadgen.Config, rw *record.RunWriter, rs *record.Run) (*loadgen.Result, time.Time, []cgroup.CPUStat, error) {
	var start time.Time
	before := make([]cgroup.CPUStat, len(r.groups))
	for i, g := range r.groups {
		var err error
		if before[i], err = g.Stat(); err != nil {
			return nil, start, nil, err
		}
	}
	pod, err := r.podBefore()
	if err != nil {
		return nil, start, nil, err
	}
	hostBefore, hostErr := x.markHost(r.groups)
	stopSampling, err := sample(r.groups, rw)
	if err != nil {
		return nil, start, nil, err
	}
	records, err := rw.Create(record.RequestsFile)
	if err != nil {
		stopSampling()
		return nil, start, nil, err
	}
	lc.Records = records

	probeDone := make(chan *loadgen.Result, 1)
	if r.probe != nil {
		probeRecords, err := rw.Create(record.ProbeFile)
		if err != nil {
			stopSampling()
			return nil, start, nil, err
		}
		pc := experiment.ProbeConfig(lc, *r.probe)
		pc.Records = probeRecords
		go func() {
			res, _ := loadgen.Run(ctx, pc)
			probeDone <- res
		}()
	} else {
		probeDone <- nil
	}
	start = time.Now()
	res, err := loadgen.Run(ctx, lc)
	rs.Seconds = time.Since(start).Seconds()
	if serr := stopSampling(); serr != nil && err == nil {
		err = serr
	}
	if hostErr == nil {
		if hostAfter, err := x.markHost(r.groups); err == nil {
			if other, ok := cgroup.OtherCores(hostBefore, hostAfter); ok {
				rs.HostOtherCores = &other
			}
		}
	}
	if pr := <-probeDone; pr != nil {
		rs.Probe = pr.Summary
	}
	if err != nil {
		return nil, start, nil, err
	}
	if res.Summary.Interrupted || ctx.Err() != nil {
		return nil, start, nil, context.Canceled
	}
	for i, p := range r.instances {
		if dead, why := p.exited(); dead {
			return nil, start, nil, fmt.Errorf("instance %s stopped during the run (%v): %s", rs.Instances[i], why, p.stderr.String())
		}
	}
	stats := make([]cgroup.CPUStat, len(r.groups))
	for i, g := range r.groups {
		after, err := g.Stat()
		if err != nil {
			return nil, start, nil, err
		}
		stats[i] = after.Sub(before[i])
	}
	if err := r.podAfter(pod, rs.Seconds, rw); err != nil {
		return nil, start, nil, err
	}
	return res, start, stats, nil
}

// podReading is the pod group's counts and use at the load's start.
type podReading struct {
	stat  cgroup.CPUStat
	usage time.Duration
}

// podBefore reads the pod group, if the run has one, before the load.
func (r *running) podBefore() (*podReading, error) {
	if r.pod == nil {
		return nil, nil
	}
	st, err := r.pod.Stat()
	if err != nil {
		return nil, fmt.Errorf("the pod group: %w", err)
	}
	u, err := r.pod.Usage()
	if err != nil {
		return nil, fmt.Errorf("the pod group: %w", err)
	}
	return &podReading{st, u}, nil
}

// podAfter writes the pod group's record over the load (record.PodGroupFile):
// its own throttling, which its instances' groups do not count.
func (r *running) podAfter(before *podReading, loadSec float64, rw *record.RunWriter) error {
	if before == nil {
		return nil
	}
	after, err := r.podBefore()
	if err != nil {
		return err
	}
	s := r.pod.Settings
	g := record.PodGroup{Run: r.runID, Pod: r.pod.Name, Group: r.pod.Dirs["cpu"], QuotaUsec: s.QuotaUsec, PeriodUsec: s.PeriodUsec,
		CPUStat: after.stat.Sub(before.stat), WindowSec: loadSec}
	if loadSec > 0 {
		g.UsageCores = (after.usage - before.usage).Seconds() / loadSec
	}
	w, err := rw.Create(record.PodGroupFile)
	if err != nil || w == nil {
		return err
	}
	b, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// sample hands each group's usage and throttled periods to rw every 10 ms
// (usage.csv, throttled.csv, and the run record's usage figures) until the
// returned stop is called.
func sample(groups []*cgroup.Group, rw *record.RunWriter) (stop func() error, err error) {
	s, err := cgroup.NewSampler(groups)
	if err != nil {
		return nil, err
	}
	if err := rw.StartUsage(); err != nil {
		s.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, 10*time.Millisecond, rw.Sample)
	}()
	return func() error { cancel(); <-done; s.Close(); return rw.CloseUsage() }, nil
}

// markHost marks the host (cgroup.MarkHost) with the run's groups' usage
// as ours: two marks tell how much CPU other work took (cgroup.OtherCores).
func (x *Backend) markHost(groups []*cgroup.Group) (cgroup.HostMark, error) {
	m, err := cgroup.MarkHost("/")
	if err != nil {
		return m, err
	}
	if x.lg != nil {
		groups = append(groups[:len(groups):len(groups)], x.lg)
	}
	for _, g := range groups {
		u, err := g.Usage()
		if err != nil {
			return m, err
		}
		m.Ours += u
	}
	return m, nil
}
