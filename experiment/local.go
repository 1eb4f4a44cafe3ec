package experiment

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"gopkg.in/yaml.v3"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/units"
	"github.com/throttlelab/throttlelab/workload"
)

// Options control a local run.
type Options struct {
	// Binary is the throttlelab executable started for instances and neighbours.
	Binary string
	// Dir is the results directory; with Resume it already holds some runs.
	Dir    string
	Resume bool
	// Version is written into env.json.
	Version string
	// Log receives one line per run, with progress and an ETA.
	Log io.Writer
	// Root is the kernel file system root ("/"), RunID the cgroup subtree name.
	Root  string
	RunID string
}

// RunSummary is what one run measured. It is the run's summary.json.
type RunSummary struct {
	ID        string           `json:"id"`
	Index     int              `json:"index"`
	Config    string           `json:"config"`
	Load      string           `json:"load"`
	Repeat    int              `json:"repeat"`
	QoS       cgroup.QoSClass  `json:"qos"`
	Settings  cgroup.Settings  `json:"cgroup_settings"`
	Instances []string         `json:"instances"`
	Summary   *loadgen.Summary `json:"load_summary"`
	// CPUStat holds each instance's cpu.stat over the measured load (not the
	// warm-up), and Total their sum.
	CPUStat map[string]cgroup.CPUStat `json:"cpu_stat"`
	Total   cgroup.CPUStat            `json:"cpu_stat_total"`
	// Usage of each instance in cores: mean over the run, and the highest
	// 100 ms and 1 s windows (from the 10 ms samples).
	Usage      map[string]UsageStats     `json:"usage_cores"`
	Neighbours map[string]cgroup.CPUStat `json:"neighbour_cpu_stat,omitempty"`
	// NeighbourUsage is each neighbour group's use in cores, like Usage.
	NeighbourUsage map[string]UsageStats `json:"neighbour_usage_cores,omitempty"`
	Probe          *loadgen.Summary      `json:"probe_summary,omitempty"`
	Started        time.Time             `json:"started"`
	Seconds        float64               `json:"seconds"`
}

// UsageStats is an instance's CPU use in cores at three resolutions.
type UsageStats struct {
	Mean      float64 `json:"mean"`
	Peak100ms float64 `json:"peak_100ms"`
	Peak1s    float64 `json:"peak_1s"`
}

// ThrottledPct is the share of periods in which the run's instances were throttled.
func (r *RunSummary) ThrottledPct() float64 {
	if r.Total.Periods == 0 {
		return 0
	}
	return 100 * float64(r.Total.ThrottledPeriods) / float64(r.Total.Periods)
}

// RunLocal runs the experiment with real processes in real cgroups, writing
// results to opt.Dir as each run finishes. On cancellation it stops, removes every
// process and group it made, and returns ctx's error; finished runs stay.
func RunLocal(ctx context.Context, e *Experiment, opt Options) ([]*RunSummary, error) {
	if opt.Root == "" {
		opt.Root = "/"
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	if opt.RunID == "" {
		opt.RunID = fmt.Sprintf("%s-%d", e.Metadata.Name, os.Getpid())
	}
	withCpuset := false
	for _, c := range e.Spec.Configs {
		withCpuset = withCpuset || c.CPU.Cpuset != ""
		for _, n := range e.NeighboursOf(c) {
			withCpuset = withCpuset || n.CPU.Cpuset != ""
		}
	}
	// Groups left by a runner that was killed outright (its instances died with
	// it, through PDEATHSIG, but nobody removed the groups).
	if removed, _ := cgroup.RemoveStale(opt.Root); len(removed) > 0 {
		fmt.Fprintf(opt.Log, "removed the cgroups of a run that was killed: %s\n", strings.Join(removed, " "))
	}
	m, err := cgroup.NewManager(opt.Root, opt.RunID, withCpuset)
	if err != nil {
		return nil, err
	}
	defer m.Cleanup(true)
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return nil, err
	}
	if !opt.Resume {
		spec, err := yaml.Marshal(e)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(opt.Dir, "spec.yaml"), spec, 0o644); err != nil {
			return nil, err
		}
	}
	// One calibration for every instance, so cpu=5ms means the same everywhere.
	cal, err := workload.CalibrateBurn(20_000_000, 5)
	if err != nil {
		return nil, err
	}
	if !opt.Resume {
		// The calibration is a measurement: the simulator takes the burn
		// speed from it when it is compared with this run.
		env := ReadEnv(opt.Version, m)
		env.GOMAXPROCS = map[string]string{}
		for _, c := range e.Spec.Configs {
			env.GOMAXPROCS[c.Name] = c.Server.GOMAXPROCS.String()
		}
		env.BurnIterationsPerMs = cal.IterationsPerMs
		if err := WriteJSON(filepath.Join(opt.Dir, "env.json"), env); err != nil {
			return nil, err
		}
	}
	x := &local{e: e, opt: opt, m: m, cal: cal}
	runs := e.Runs()
	var out []*RunSummary
	started := time.Now()
	done := 0
	for _, run := range runs {
		dir := filepath.Join(opt.Dir, "runs", run.ID())
		if prev, err := readRunSummary(dir); err == nil {
			fmt.Fprintf(opt.Log, "run %d/%d %s: done before, kept\n", run.Index+1, len(runs), run.ID())
			out = append(out, prev)
			continue
		}
		eta := "?"
		if done > 0 {
			per := time.Since(started) / time.Duration(done)
			eta = (per * time.Duration(len(runs)-run.Index)).Round(time.Second).String()
		}
		fmt.Fprintf(opt.Log, "run %d/%d %s (eta %s)\n", run.Index+1, len(runs), run.ID(), eta)
		rs, err := x.run(ctx, run, dir)
		if err != nil {
			return out, fmt.Errorf("run %s: %w", run.ID(), err)
		}
		done++
		out = append(out, rs)
	}
	return out, nil
}

type local struct {
	e   *Experiment
	opt Options
	m   *cgroup.Manager
	cal workload.BurnCalibration
}

func (x *local) serveArgs(name string, s Server) []string {
	args := []string{"serve", "--listen", "127.0.0.1:0", "--name", name, "--gomaxprocs", s.GOMAXPROCS.String(),
		"--burn-calibration", strconv.FormatFloat(x.cal.IterationsPerMs, 'f', 1, 64)}
	if s.Single {
		args = append(args, "--single")
	}
	if s.CPUClock != nil && !*s.CPUClock {
		args = append(args, "--cpu-clock=false")
	}
	return args
}

// run performs one run in a temporary directory and renames it into place when
// it is complete.
func (x *local) run(ctx context.Context, run Run, dir string) (*RunSummary, error) {
	tmp := filepath.Join(filepath.Dir(dir), ".tmp-"+filepath.Base(dir))
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	rs := &RunSummary{ID: run.ID(), Index: run.Index, Config: run.Config.Name, Load: run.Load.Name, Repeat: run.Repeat,
		CPUStat: map[string]cgroup.CPUStat{}, Usage: map[string]UsageStats{}, Started: time.Now().UTC()}
	settings, qos, err := x.e.Settings(run.Config)
	if err != nil {
		return nil, err
	}
	rs.Settings, rs.QoS = settings, qos

	var procs []*proc
	var groups []*cgroup.Group
	defer func() {
		for _, p := range procs {
			p.stop(5 * time.Second)
		}
		for _, g := range groups {
			g.Remove()
		}
	}()
	var instances []*proc
	var instGroups []*cgroup.Group
	for i := 0; i < run.Config.Instances; i++ {
		name := fmt.Sprintf("%s-%d", run.Config.Name, i)
		g, err := x.m.NewGroup(fmt.Sprintf("r%03d-%s", run.Index, name), settings)
		if err != nil {
			return nil, err
		}
		groups = append(groups, g)
		p, err := startInGroup(g, name, x.opt.Binary, x.serveArgs(name, run.Config.Server), true, nil)
		if err != nil {
			return nil, err
		}
		procs, instances, instGroups = append(procs, p), append(instances, p), append(instGroups, g)
		rs.Instances = append(rs.Instances, name)
	}
	var neighbourGroups []*cgroup.Group
	var probe *Neighbour
	neighbours := x.e.NeighboursOf(run.Config)
	for i := range neighbours {
		n := &neighbours[i]
		if n.Kind == "probe" {
			probe = n
			continue
		}
		ns, err := x.e.NeighbourSettings(*n)
		if err != nil {
			return nil, err
		}
		g, err := x.m.NewGroup(NeighbourGroup(run.Index, n.Name), ns)
		if err != nil {
			return nil, err
		}
		groups = append(groups, g)
		neighbourGroups = append(neighbourGroups, g)
		var args []string
		switch n.Kind {
		case "noise":
			args = []string{"noise", "--threads", strconv.Itoa(n.Threads)}
		case "burst":
			args = []string{"burst", "--workers", strconv.Itoa(n.Workers), "--busy", n.Busy.String(), "--sleep", n.Sleep.String(), "--gomaxprocs", strconv.Itoa(n.Workers)}
		case "server":
			args = x.serveArgs(n.Name, Server{GOMAXPROCS: units.GOMAXPROCSHost})
		}
		var stdout io.Writer
		if n.Kind == "burst" {
			// One JSON line per cycle: the burst worker's goodput is a measurement.
			f, err := os.Create(filepath.Join(tmp, "burst-"+n.Name+".jsonl"))
			if err != nil {
				return nil, err
			}
			defer f.Close()
			stdout = f
		}
		p, err := startInGroup(g, n.Name, x.opt.Binary, args, n.Kind == "server", stdout)
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
	}
	var targets []string
	for _, p := range instances {
		if err := p.waitHealthy(ctx); err != nil {
			return nil, err
		}
		targets = append(targets, p.url)
	}

	lc := x.e.LoadConfig(run.Load)
	lc.Targets = targets
	if w := x.e.Spec.Warmup.Duration; w > 0 {
		warm := lc
		warm.Duration, warm.Requests = w, 0
		if warm.Mode == loadgen.ModeRamp {
			// One step at the top of the ramp, whatever the requests are.
			warm.RampFrom, warm.RampStep = warm.RampTo, w
		}
		if _, err := loadgen.Run(ctx, warm); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	all := append(append([]*cgroup.Group{}, instGroups...), neighbourGroups...)
	before := make([]cgroup.CPUStat, len(all))
	for i, g := range all {
		if before[i], err = g.Stat(); err != nil {
			return nil, err
		}
	}
	usage, err := os.Create(filepath.Join(tmp, "usage.csv"))
	if err != nil {
		return nil, err
	}
	defer usage.Close()
	throttled, err := os.Create(filepath.Join(tmp, "throttled.csv"))
	if err != nil {
		return nil, err
	}
	defer throttled.Close()
	samples, stopSampling, err := x.sample(all, usage, throttled)
	if err != nil {
		return nil, err
	}
	records, err := os.Create(filepath.Join(tmp, "requests.csv"))
	if err != nil {
		stopSampling()
		return nil, err
	}
	defer records.Close()
	lc.Records = records

	probeDone := make(chan *loadgen.Result, 1)
	if probe != nil {
		probeRecords, err := os.Create(filepath.Join(tmp, "probe.csv"))
		if err != nil {
			stopSampling()
			return nil, err
		}
		defer probeRecords.Close()
		pc := ProbeConfig(lc, *probe)
		pc.Records = probeRecords
		go func() {
			r, _ := loadgen.Run(ctx, pc)
			probeDone <- r
		}()
	} else {
		probeDone <- nil
	}
	start := time.Now()
	res, err := loadgen.Run(ctx, lc)
	rs.Seconds = time.Since(start).Seconds()
	stopSampling()
	if pr := <-probeDone; pr != nil {
		rs.Probe = pr.Summary
	}
	if err != nil {
		return nil, err
	}
	if res.Summary.Interrupted || ctx.Err() != nil {
		return nil, context.Canceled
	}
	for i, p := range instances {
		if dead, why := p.exited(); dead {
			return nil, fmt.Errorf("instance %s stopped during the run (%v): %s", rs.Instances[i], why, p.stderr.String())
		}
	}
	rs.Neighbours = map[string]cgroup.CPUStat{}
	for i, g := range all {
		after, err := g.Stat()
		if err != nil {
			return nil, err
		}
		d := after.Sub(before[i])
		if i < len(instGroups) {
			rs.CPUStat[rs.Instances[i]] = d
			rs.Total = rs.Total.Add(d)
		} else {
			rs.Neighbours[g.Name] = d
			if rs.NeighbourUsage == nil {
				rs.NeighbourUsage = map[string]UsageStats{}
			}
			rs.NeighbourUsage[g.Name] = UsageStatsOf(*samples, i)
		}
	}
	for i, name := range rs.Instances {
		rs.Usage[name] = UsageStatsOf(*samples, i)
	}
	rs.Summary = res.Summary
	// Stop the neighbours now, so what they print is complete before the rename.
	for _, p := range procs {
		p.stop(5 * time.Second)
	}
	if err := records.Close(); err != nil {
		return nil, err
	}
	if err := WriteHist(filepath.Join(tmp, "latency.hdr"), res.Histogram, start); err != nil {
		return nil, err
	}
	if err := WriteJSON(filepath.Join(tmp, "summary.json"), rs); err != nil {
		return nil, err
	}
	os.RemoveAll(dir) // a leftover of an interrupted earlier attempt
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	return rs, nil
}

// sample writes usage.csv (cumulative usage in ns of each group every 10 ms)
// and throttled.csv (cumulative throttled periods at the same instants), and
// keeps the samples for the summary.
func (x *local) sample(groups []*cgroup.Group, usage, throttled io.Writer) (*[]cgroup.UsageSample, func(), error) {
	s, err := cgroup.NewSampler(groups)
	if err != nil {
		return nil, nil, err
	}
	bu, bt := bufio.NewWriter(usage), bufio.NewWriter(throttled)
	for _, bw := range []*bufio.Writer{bu, bt} {
		bw.WriteString("t_ns")
		for _, g := range groups {
			bw.WriteString("," + g.Name)
		}
		bw.WriteString("\n")
	}
	samples := &[]cgroup.UsageSample{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, 10*time.Millisecond, func(u cgroup.UsageSample) {
			*samples = append(*samples, u)
			at := strconv.FormatInt(int64(u.At), 10)
			bu.WriteString(at)
			bt.WriteString(at)
			for i, v := range u.Usage {
				bu.WriteString("," + strconv.FormatInt(int64(v), 10))
				bt.WriteString("," + strconv.FormatUint(u.Throttled[i], 10))
			}
			bu.WriteString("\n")
			bt.WriteString("\n")
		})
	}()
	return samples, func() { cancel(); <-done; bu.Flush(); bt.Flush(); s.Close() }, nil
}

// UsageStatsOf computes one group's use in cores from cumulative samples.
func UsageStatsOf(samples []cgroup.UsageSample, i int) UsageStats {
	var st UsageStats
	if len(samples) < 2 {
		return st
	}
	first, last := samples[0], samples[len(samples)-1]
	if span := last.At - first.At; span > 0 {
		st.Mean = float64(last.Usage[i]-first.Usage[i]) / float64(span)
	}
	peak := func(window time.Duration) float64 {
		best, j := 0.0, 0
		for k := range samples {
			for j < k && samples[k].At-samples[j].At > window {
				j++
			}
			if span := samples[k].At - samples[j].At; span >= window*9/10 {
				best = max(best, float64(samples[k].Usage[i]-samples[j].Usage[i])/float64(span))
			}
		}
		return best
	}
	st.Peak100ms, st.Peak1s = peak(100*time.Millisecond), peak(time.Second)
	return st
}

// WriteJSON writes v as indented JSON.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// WriteHist writes a latency histogram as latency.hdr.
func WriteHist(path string, h *hdrhistogram.Histogram, start time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := loadgen.WriteHistogram(f, h, start); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func readRunSummary(dir string) (*RunSummary, error) {
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, err
	}
	var rs RunSummary
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, err
	}
	if rs.Summary == nil {
		return nil, errors.New("incomplete run summary")
	}
	return &rs, nil
}
