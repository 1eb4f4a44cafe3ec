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
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/record"
	"os/exec"
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
}

const period = 100 * time.Millisecond

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
  load: {mode: rate, rate: 60, arrivals: poisson, duration: 15s}
  configs:
` + c + `  repeats: 1
  warmup: 500ms
`
		}, "", []limit{{"l400", 400, 0}, {"l600", 600, 0}, {"l300b", 300, 300}}},
	{"burst", "burst worker: 2 goroutines busy 40 ms every 400 ms (0.2 cores), measured as a neighbour",
		nil, "burst", []limit{{"l400", 400, 0}, {"l800", 800, 0}, {"l400b", 400, 400}}},
	{"onoff", "on/off API: 16 Markov sources (on 200 ms, off 1.8 s, 200 req/s while on) of 1 ms burns",
		func(c string) string {
			return `spec:
  workload: {request: burn, burn: cpu=1ms}
  load: {mode: onoff, sources: 16, "on": 200ms, "off": 1800ms, rate: 200, duration: 15s}
  configs:
` + c + `  repeats: 1
  warmup: 500ms
`
		}, "", []limit{{"l400", 400, 0}, {"l700", 700, 0}, {"l400b", 400, 400}}},
}

func init() {
	workloads[1].spec = func(c string) string {
		return `spec:
  workload: {request: api}
  load: {mode: rate, rate: 5, duration: 15s}
  configs:
` + c + `  repeats: 1
  warmup: 500ms
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
	Workload, What                   string
	Limit                            string
	PredictedRatio, MeasuredRatio    float64
	PredictedRatioWorst              float64
	PredictedP99Ms, MeasuredP99AddMs float64
	MeasuredPeriods                  uint64
	UnlimitedMean, UnlimitedMax10ms  float64
	Pass                             bool
}

func main() {
	name := flag.String("workload", "", "run this workload (poisson, burst, onoff) and save its rows")
	out := flag.String("out", "/tmp/validate-advise", "directory for results and rows")
	doc := flag.String("doc", "", "write the table of every saved row to this Markdown file")
	bin := flag.String("bin", "bin/throttlelab", "the throttlelab binary that runs the workloads")
	flag.Parse()
	if err := run(*name, *out, *doc, *bin); err != nil {
		fmt.Fprintln(os.Stderr, "validate-advise:", err)
		os.Exit(1)
	}
}

func run(name, out, doc, bin string) error {
	if doc != "" {
		return writeDoc(out, doc)
	}
	for _, w := range workloads {
		if w.name != name {
			continue
		}
		dir := filepath.Join(out, w.name)
		os.RemoveAll(dir)
		os.MkdirAll(out, 0o755)
		specPath := filepath.Join(out, w.name+".yaml")
		if err := os.WriteFile(specPath, []byte(specOf(w)), 0o644); err != nil {
			return err
		}
		cmd := exec.Command(bin, "run", specPath, "--out", dir)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s run %s: %w", bin, specPath, err)
		}
		rows, err := compare(w, dir)
		if err != nil {
			return err
		}
		b, _ := json.MarshalIndent(rows, "", "  ")
		return os.WriteFile(filepath.Join(out, w.name+".json"), b, 0o644)
	}
	return fmt.Errorf("-workload %q: want poisson, burst or onoff", name)
}

// compare predicts from the unlimited run and reads what the limited runs measured.
func compare(w wl, dir string) ([]Row, error) {
	unl, err := advise.ReadRecorded(dir, "unlimited", w.instance)
	if err != nil {
		return nil, err
	}
	var points []advise.Point
	for _, l := range w.limits {
		points = append(points, advise.Point{LimitMilli: l.LimitMilli, BurstMilli: l.BurstMilli, Period: period})
	}
	evs, err := advise.Evaluate(unl.Demand, points, advise.Options{})
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
		rows = append(rows, Row{Workload: w.name, What: w.what, Limit: points[i].String(),
			PredictedRatio: e.ThrottledRatio, PredictedRatioWorst: e.ThrottledRatioWorst, MeasuredRatio: ratio,
			PredictedP99Ms: e.DelayP99Ms, MeasuredP99AddMs: p99 - baseP99, MeasuredPeriods: m.CPUStat.Periods,
			UnlimitedMean: unl.Demand.MeanCores(), UnlimitedMax10ms: unl.Demand.MaxCores(),
			Pass: diff <= math.Max(0.07, 0.3*ratio)})
	}
	return rows, nil
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
	f, err := os.Create(doc)
	if err != nil {
		return err
	}
	defer f.Close()
	return table(f, rows)
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
through `+"`throttlelab run`"+` (local backend, 15 s each, 100 ms period). The predictions
come from the unlimited run's 10 ms usage samples alone, replayed through the quota
model (mean over 10 phases; WORST is the worst phase). Measured throttled share is the
limited run's nr_throttled / nr_periods. Target: within 0.07 absolute or 30%% relative,
whichever is larger. The delay columns are not the same quantity on both sides: the
prediction is the p99 delay the limit adds to the work (each ns of CPU weighs alike);
the measurement is how much the p99 latency of requests (burst: of a busy phase's wall
time) grew against the unlimited run, on a shared, noisy 2-core machine.

**%d of %d points within the target.**

| workload | limit | predicted throttled | worst phase | measured throttled | periods | within target | predicted p99 added delay | measured p99 increase |
|---|---|---|---|---|---|---|---|---|
`, time.Now().UTC().Format("2006-01-02 15:04 UTC"), host, strings.TrimSpace(string(kernel)), runtime.NumCPU(), runtime.GOARCH, pass, len(rows))
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
		fmt.Fprintf(w, "| %s | %s | %.3f | %.3f | %.3f | %d | %s | %.1f ms | %.1f ms |\n", name, r.Limit, r.PredictedRatio, r.PredictedRatioWorst,
			r.MeasuredRatio, r.MeasuredPeriods, ok, r.PredictedP99Ms, r.MeasuredP99AddMs)
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
