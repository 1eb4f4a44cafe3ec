// Command validate-advise checks advise's predictions against real cgroups:
// for each workload it runs the workload once without a limit and at three
// limits (one with burst) through throttlelab run (the local backend), predicts
// from the unlimited run alone the throttled share of periods and the p99
// added delay at those limits, and tabulates predicted against measured.
//
//	go run ./hack/validate-advise -workload poisson -out /tmp/va   (as root, under the host lock)
//	go run ./hack/validate-advise -doc docs/advise.md -out /tmp/va  (writes the table)
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/record"
)

type limit struct {
	Name       string
	LimitMilli int64
	BurstMilli int64
}

type wl struct {
	name, what string
	// spec builds the experiment; cpu is the YAML flow map of a config's
	// CPU settings ("{}" for none).
	spec func(configs string) string
	// instance is whose usage is replayed: the server or the burst neighbour.
	instance string
	limits   []limit
	// wallClock: the workload's demand is bound to wall-clock time (the
	// burst worker spins until a deadline), replayed with advise's
	// Options.WallClock.
	wallClock bool
}

const period = 100 * time.Millisecond

// runFor is how long each config runs (-duration); every config of a
// workload runs the same load with the same seed.
var runFor = 30 * time.Second

func cpuOf(l limit) string {
	if l.LimitMilli == 0 {
		return "{}"
	}
	s := fmt.Sprintf("{limit: %dm", l.LimitMilli)
	if l.BurstMilli > 0 {
		s += fmt.Sprintf(", burst: %dms", l.BurstMilli*int64(period/time.Millisecond)/1000)
	}
	return s + "}"
}

var workloads = []wl{
	{"poisson", "Poisson 5 ms CPU burns, 60/s (0.3 cores), one instance",
		func(c string) string {
			return `spec:
  workload: {request: burn, burn: cpu=5ms}
  load: {mode: rate, rate: 60, arrivals: poisson, duration: ` + runFor.String() + `}
  configs:
` + c + `  repeats: 1
  warmup: 500ms
  seed: 1
`
		}, "", []limit{{"l400", 400, 0}, {"l600", 600, 0}, {"l300b", 300, 300}}, false},
	{"burst", "burst worker: 2 goroutines busy 40 ms every 400 ms (0.2 cores), measured as a neighbour",
		nil, "burst", []limit{{"l400", 400, 0}, {"l800", 800, 0}, {"l400b", 400, 400}}, true},
	{"onoff", "on/off API: 16 Markov sources (on 200 ms, off 1.8 s, 200 req/s while on) of 1 ms burns",
		func(c string) string {
			return `spec:
  workload: {request: burn, burn: cpu=1ms}
  load: {mode: onoff, sources: 16, "on": 200ms, "off": 1800ms, rate: 200, duration: ` + runFor.String() + `}
  configs:
` + c + `  repeats: 1
  warmup: 500ms
  seed: 1
`
		}, "", []limit{{"l400", 400, 0}, {"l700", 700, 0}, {"l400b", 400, 400}}, false},
}

func init() {
	workloads[1].spec = func(c string) string {
		return `spec:
  workload: {request: api}
  load: {mode: rate, rate: 5, duration: ` + runFor.String() + `}
  configs:
` + c + `  repeats: 1
  warmup: 500ms
  seed: 1
`
	}
}

func specOf(w wl) string {
	all := append([]limit{{Name: "unlimited"}}, w.limits...)
	var c strings.Builder
	for _, l := range all {
		if w.name == "burst" {
			fmt.Fprintf(&c, "    - name: %s\n      neighbours:\n        - {name: burst, kind: burst, workers: 2, busy: 40ms, sleep: 360ms, cpu: %s}\n", l.Name, cpuOf(l))
		} else {
			fmt.Fprintf(&c, "    - name: %s\n      cpu: %s\n", l.Name, cpuOf(l))
		}
	}
	return "apiVersion: throttlelab/v1alpha1\nkind: Experiment\nmetadata:\n  name: validate-advise-" + w.name + "\n" + w.spec(c.String())
}

// Row is one limit of one workload: predicted against measured.
type Row struct {
	Workload, What                string
	Limit                         string
	PredictedRatio, MeasuredRatio float64
	PredictedRatioWorst           float64
	PredictedRatioBest            float64
	// PredictedLow and PredictedHigh are advise's interval (the spread over
	// the unlimited run's time blocks); InWidenedInterval says whether the
	// measured share lies inside it widened by max(0.07, 30%).
	PredictedLow, PredictedHigh      float64
	InWidenedInterval                bool
	PredictedP99Ms, MeasuredP99AddMs float64
	MeasuredPeriods                  uint64
	UnlimitedMean, UnlimitedMax10ms  float64
	// CPU seconds the group used in the unlimited and the limited run, and
	// (wall-clock demand) what the replay predicts is lost under the limit.
	WorkUnlimitedS, WorkLimitedS, PredictedLostS float64
	// Cores the rest of the machine (load generator, other users) used
	// during the unlimited and the limited run, from /proc/stat.
	OthersUnlimited, OthersLimited float64
	Pass                           bool
	// Why lists what may explain a miss.
	Why []string `json:",omitempty"`
}

func main() {
	name := flag.String("workload", "", "run this workload (poisson, burst, onoff) and save its rows")
	out := flag.String("out", "/tmp/validate-advise", "directory for results and rows")
	doc := flag.String("doc", "", "write the table of every saved row to this Markdown file")
	bin := flag.String("bin", "bin/throttlelab", "the throttlelab binary that runs the workloads")
	flag.DurationVar(&runFor, "duration", runFor, "how long each config runs")
	noRun := flag.Bool("no-run", false, "compare the results already in -out again (others' load is then unknown)")
	flag.Parse()
	if err := run(*name, *out, *doc, *bin, *noRun); err != nil {
		fmt.Fprintln(os.Stderr, "validate-advise:", err)
		os.Exit(1)
	}
}

func run(name, out, doc, bin string, noRun bool) error {
	if doc != "" {
		return writeDoc(out, doc)
	}
	for _, w := range workloads {
		if w.name != name {
			continue
		}
		dir := filepath.Join(out, w.name)
		if noRun {
			rows, err := compare(w, dir, nil)
			if err != nil {
				return err
			}
			printRows(rows)
			return nil
		}
		os.RemoveAll(dir)
		os.MkdirAll(out, 0o755)
		specPath := filepath.Join(out, w.name+".yaml")
		if err := os.WriteFile(specPath, []byte(specOf(w)), 0o644); err != nil {
			return err
		}
		cmd := exec.Command(bin, "run", specPath, "--out", dir)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		host := sampleHost()
		err := cmd.Run()
		load := host()
		if err != nil {
			return fmt.Errorf("%s run %s: %w", bin, specPath, err)
		}
		rows, err := compare(w, dir, load)
		if err != nil {
			return err
		}
		printRows(rows)
		b, _ := json.MarshalIndent(rows, "", "  ")
		return os.WriteFile(filepath.Join(out, w.name+".json"), b, 0o644)
	}
	return fmt.Errorf("-workload %q: want poisson, burst or onoff", name)
}

func printRows(rows []Row) {
	for _, r := range rows {
		verdict := "within target"
		if !r.Pass {
			verdict = "MISSED: " + strings.Join(r.Why, "; ")
		}
		fmt.Printf("%s %s: predicted %.3f (phases %.3f..%.3f), measured %.3f: %s\n", r.Workload, r.Limit,
			r.PredictedRatio, r.PredictedRatioBest, r.PredictedRatioWorst, r.MeasuredRatio, verdict)
	}
}

// compare predicts from the unlimited run and reads what the limited runs measured.
func compare(w wl, dir string, load hostLoad) ([]Row, error) {
	unl, err := advise.ReadRecorded(dir, "unlimited", w.instance)
	if err != nil {
		return nil, err
	}
	var points []advise.Point
	for _, l := range w.limits {
		points = append(points, advise.Point{LimitMilli: l.LimitMilli, BurstMilli: l.BurstMilli, Period: period})
	}
	evs, err := advise.EvaluateIntervals(unl.Demand, points, advise.Options{WallClock: w.wallClock})
	if err != nil {
		return nil, err
	}
	_, _, runs, err := record.ReadResults(dir)
	if err != nil {
		return nil, err
	}
	byConfig := map[string]*record.Run{}
	for _, r := range runs {
		byConfig[r.Config] = r
	}
	baseP99, err := p99Of(w, dir, byConfig["unlimited"])
	if err != nil {
		return nil, err
	}
	var rows []Row
	for i, l := range w.limits {
		r := byConfig[l.Name]
		if r == nil {
			return nil, fmt.Errorf("%s: no run of %s", dir, l.Name)
		}
		m, err := advise.ReadRecorded(dir, l.Name, w.instance)
		if err != nil {
			return nil, err
		}
		p99, err := p99Of(w, dir, r)
		if err != nil {
			return nil, err
		}
		ratio := 0.0
		if m.CPUStat.Periods > 0 {
			ratio = float64(m.CPUStat.ThrottledPeriods) / float64(m.CPUStat.Periods)
		}
		e := evs[i]
		diff := math.Abs(e.ThrottledRatio - ratio)
		lo, hi := e.ThrottledRatioRange[0], e.ThrottledRatioRange[1]
		inWide := ratio >= lo-math.Max(0.07, 0.3*lo) && ratio <= hi+math.Max(0.07, 0.3*hi)
		row := Row{Workload: w.name, What: w.what, Limit: points[i].String(),
			PredictedRatio: e.ThrottledRatio, PredictedLow: lo, PredictedHigh: hi, InWidenedInterval: inWide, PredictedRatioWorst: e.ThrottledRatioWorst, PredictedRatioBest: e.ThrottledRatioBest, MeasuredRatio: ratio,
			PredictedP99Ms: e.DelayP99Ms, MeasuredP99AddMs: p99 - baseP99, MeasuredPeriods: m.CPUStat.Periods,
			UnlimitedMean: unl.Demand.MeanCores(), UnlimitedMax10ms: unl.Demand.MaxCores(),
			WorkUnlimitedS: unl.Demand.Work().Seconds(), WorkLimitedS: m.Demand.Work().Seconds(), PredictedLostS: e.LostSeconds,
			OthersUnlimited: load.others(byConfig["unlimited"], unl.Demand), OthersLimited: load.others(r, m.Demand),
			Pass: diff <= math.Max(0.07, 0.3*ratio)}
		if !row.Pass {
			row.Why = whyMissed(row)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// whyMissed lists what may explain a point outside the target, from what
// the runs recorded.
func whyMissed(r Row) []string {
	var why []string
	if r.MeasuredRatio >= r.PredictedRatioBest && r.MeasuredRatio <= r.PredictedRatioWorst {
		why = append(why, fmt.Sprintf("measured lies inside the spread over phases (%.3f..%.3f): the kernel's period phase decided", r.PredictedRatioBest, r.PredictedRatioWorst))
	}
	// The work the replay expects the limited run to do: all of the
	// unlimited run's, less what wall-clock demand loses.
	expect := r.WorkUnlimitedS - r.PredictedLostS
	if expect > 0 && math.Abs(r.WorkLimitedS-expect) > 0.1*expect {
		why = append(why, fmt.Sprintf("the limited run did %.2f CPU-s of work, the replay expected %.2f (%+.0f%%): the demand was not the one recorded without a limit (per-request cost, contention)",
			r.WorkLimitedS, expect, 100*(r.WorkLimitedS-expect)/expect))
	}
	if r.OthersLimited > 0.5 || r.OthersUnlimited > 0.5 {
		why = append(why, fmt.Sprintf("the rest of the machine used %.2f cores during the limited run (%.2f during the unlimited one) of %d: the group competed for CPU, which stretches its work in time",
			r.OthersLimited, r.OthersUnlimited, runtime.NumCPU()))
	}
	if r.MeasuredPeriods < 100 {
		why = append(why, fmt.Sprintf("only %d periods measured: one period is %.3f of the share", r.MeasuredPeriods, 1/float64(max(r.MeasuredPeriods, 1))))
	}
	switch {
	case r.MeasuredRatio > r.PredictedRatioWorst:
		why = append(why, "the kernel throttled more periods than the fluid model at any phase: it hands runtime to each CPU in 5 ms slices, so one CPU can be throttled while another holds runtime (the model shares the pool perfectly)")
	case r.MeasuredRatio < r.PredictedRatioBest:
		why = append(why, "the kernel throttled fewer periods than the model at every phase: the recorded demand may have had peaks the limited run did not repeat")
	}
	return why
}

// hostLoad is the machine's busy CPU time sampled during a run.
type hostLoad []hostSample

type hostSample struct {
	at   time.Time
	busy float64 // CPU seconds not idle or iowait, summed over CPUs, since origin (less a constant)
}

// sampleHost reads /proc/stat every 200 ms until the returned function is
// called, which returns the samples.
func sampleHost() func() hostLoad {
	var (
		out  hostLoad
		done = make(chan struct{})
		fin  = make(chan struct{})
	)
	go func() {
		defer close(fin)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			if idle, cpus, err := cgroup.HostIdle("/"); err == nil {
				// Busy time up to a constant: the CPUs' time less their idle
				// time (exact on a tickless kernel, where /proc/stat's busy
				// fields are sampled at ticks).
				now := time.Now()
				out = append(out, hostSample{now, float64(cpus)*now.Sub(origin).Seconds() - idle.Seconds()})
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() hostLoad { close(done); <-fin; return out }
}

// origin is the fixed instant hostSample.busy counts the CPUs' time from.
var origin = time.Now()

// others returns the cores the rest of the machine used during run r: the
// host's busy time over the run's span less the group's own work.
func (h hostLoad) others(r *record.Run, d *advise.Demand) float64 {
	if r == nil || r.Seconds <= 0 || len(h) < 2 {
		return 0
	}
	from, to := r.Started, r.Started.Add(time.Duration(r.Seconds*float64(time.Second)))
	var a, b *hostSample
	for i := range h {
		if a == nil && !h[i].at.Before(from) {
			a = &h[i]
		}
		if !h[i].at.After(to) {
			b = &h[i]
		}
	}
	if a == nil || b == nil || !b.at.After(a.at) {
		return 0
	}
	span := b.at.Sub(a.at).Seconds()
	return max(0, (b.busy-a.busy)/span-d.MeanCores())
}

// p99Of is the p99 latency of the run's requests (ms), or for the burst
// worker the p99 wall time of its busy phases.
func p99Of(w wl, dir string, r *record.Run) (float64, error) {
	if w.instance != "burst" {
		return r.Summary.Latency.P99, nil
	}
	cs, err := record.ReadBurstCycles(filepath.Join(dir, "runs", r.ID), "burst")
	if err != nil {
		return 0, err
	}
	var v []float64
	for _, c := range cs {
		v = append(v, c.BusyWallMs)
	}
	return pct(v, 99), nil
}

func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	return v[min(len(v)-1, int(math.Ceil(p/100*float64(len(v))))-1)]
}

func writeDoc(out, doc string) error {
	var rows []Row
	for _, w := range workloads {
		b, err := os.ReadFile(filepath.Join(out, w.name+".json"))
		if err != nil {
			return fmt.Errorf("%w: run -workload %s first", err, w.name)
		}
		var rs []Row
		if err := json.Unmarshal(b, &rs); err != nil {
			return err
		}
		rows = append(rows, rs...)
	}
	var b strings.Builder
	if err := table(&b, rows); err != nil {
		return err
	}
	// The generated part goes between the markers when the page has them
	// (the rest of docs/advise.md is written by hand).
	const begin, end = "<!-- validate-advise:begin -->\n", "<!-- validate-advise:end -->\n"
	text := b.String()
	if old, err := os.ReadFile(doc); err == nil {
		if i, j := strings.Index(string(old), begin), strings.Index(string(old), end); i >= 0 && j > i {
			text = string(old[:i+len(begin)]) + strings.Replace(text, "# advise: predicted against measured", "## Predicted against measured", 1) + string(old[j:])
		}
	}
	return os.WriteFile(doc, []byte(text), 0o644)
}

func table(w io.Writer, rows []Row) error {
	host, _ := os.Hostname()
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	pass := 0
	for _, r := range rows {
		if r.Pass {
			pass++
		}
	}
	fmt.Fprintf(w, `# advise: predicted against measured

Generated by `+"`make validate-advise`"+` (hack/validate-advise) on %s, host %s, kernel %s, %d CPUs (%s).

Each workload ran once without a limit and once at each limit below, on real cgroups
through `+"`throttlelab run`"+` (local backend, %s each with the same load and seed, 100 ms
period). The predictions come from the unlimited run's 10 ms usage samples alone,
replayed through the quota model (mean over 10 phases; PHASES is the range over them;
the burst worker's demand is replayed as wall-clock demand, see advise --wall-clock).
Measured throttled share is the limited run's nr_throttled / nr_periods. Target: within 0.07 absolute or 30%% relative,
whichever is larger. The delay columns are not the same quantity on both sides: the
prediction is the p99 delay the limit adds to the work (each ns of CPU weighs alike);
the measurement is how much the p99 latency of requests (burst: of a busy phase's wall
time) grew against the unlimited run, on a shared, noisy 2-core machine. Others' load is
the cores the rest of the machine (load generator, other users) used during the
limited run, from /proc/stat.

**%d of %d points within the target.**

| workload | limit | predicted throttled | phases | block interval | measured throttled | periods | within target | in interval ± tolerance | predicted p99 added delay | measured p99 increase | others' load (cores) |
|---|---|---|---|---|---|---|---|---|---|---|---|
`, time.Now().UTC().Format("2006-01-02 15:04 UTC"), host, strings.TrimSpace(string(kernel)), runtime.NumCPU(), runtime.GOARCH, runFor, pass, len(rows))
	last := ""
	for _, r := range rows {
		name := ""
		if r.Workload != last {
			name = r.Workload
			last = r.Workload
		}
		ok := "yes"
		if !r.Pass {
			ok = "**no**"
		}
		in := "yes"
		if !r.InWidenedInterval {
			in = "**no**"
		}
		if r.PredictedHigh == 0 && r.PredictedLow == 0 && r.PredictedRatio > 0 {
			in = "-" // rows saved before intervals existed
		}
		fmt.Fprintf(w, "| %s | %s | %.3f | %.3f..%.3f | %.3f..%.3f | %.3f | %d | %s | %s | %.1f ms | %.1f ms | %.2f |\n", name, r.Limit, r.PredictedRatio, r.PredictedRatioBest, r.PredictedRatioWorst,
			r.PredictedLow, r.PredictedHigh, r.MeasuredRatio, r.MeasuredPeriods, ok, in, r.PredictedP99Ms, r.MeasuredP99AddMs, r.OthersLimited)
	}
	for _, r := range rows {
		if !r.Pass {
			fmt.Fprintf(w, "\nWhy %s %s may have missed:\n\n", r.Workload, r.Limit)
			for _, y := range r.Why {
				fmt.Fprintf(w, "- %s\n", y)
			}
		}
	}
	fmt.Fprintln(w, "\nWorkloads (unlimited run: mean use, highest 10 ms use):")
	fmt.Fprintln(w)
	last = ""
	for _, r := range rows {
		if r.Workload != last {
			fmt.Fprintf(w, "- %s: %s; %.2f cores mean, %.2f cores at most over 10 ms\n", r.Workload, r.What, r.UnlimitedMean, r.UnlimitedMax10ms)
			last = r.Workload
		}
	}
	return nil
}
