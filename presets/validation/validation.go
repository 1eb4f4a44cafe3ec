// Package validation checks advise's predictions against runs with limits:
// each workload runs once without a limit and once at each of three limits
// (one with burst) on a backend (real cgroups through the local backend,
// or the simulator), advise predicts from the unlimited run alone, and the
// rows set the prediction and its interval beside what the limited runs
// measured. The specs are embedded; hack/validate-advise drives it on real
// cgroups, the tests on the simulator.
package validation

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io"
	"math"
	"runtime"
	"sort"
	"text/template"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/runner"
)

//go:embed specs/*.yaml
var specs embed.FS

// Period is the CFS period every limit is set with.
const Period = 100 * time.Millisecond

// Limit is one limited config of a workload.
type Limit struct {
	Name       string
	LimitMilli int64
	BurstMilli int64
}

// Workload is one validated workload.
type Workload struct {
	Name, What string
	// Instance is whose usage is replayed: the server instance (empty: the
	// config's only one) or the burst neighbour.
	Instance string
	Limits   []Limit
	// WallClock: the demand is bound to wall-clock time (the burst worker
	// spins until a deadline), replayed with advise's Options.WallClock.
	WallClock bool
}

// Workloads are the project's own validated workloads.
var Workloads = []Workload{
	{Name: "poisson", What: "Poisson 5 ms CPU burns, 60/s (0.3 cores), one instance",
		Limits: []Limit{{"l400", 400, 0}, {"l600", 600, 0}, {"l300b", 300, 300}}},
	{Name: "burst", What: "burst worker: 2 goroutines busy 40 ms every 400 ms (0.2 cores), measured as a neighbour",
		Instance: "burst", Limits: []Limit{{"l400", 400, 0}, {"l800", 800, 0}, {"l400b", 400, 400}}, WallClock: true},
	{Name: "onoff", What: "on/off API: 16 Markov sources (on 200 ms, off 1.8 s, 200 req/s while on) of 1 ms burns",
		Limits: []Limit{{"l400", 400, 0}, {"l700", 700, 0}, {"l400b", 400, 400}}},
}

// Find returns the workload named name.
func Find(name string) (Workload, error) {
	var names []string
	for _, w := range Workloads {
		if w.Name == name {
			return w, nil
		}
		names = append(names, w.Name)
	}
	return Workload{}, fmt.Errorf("workload %q: want one of %v", name, names)
}

// cpuOf is a config's cpu settings as a YAML flow map.
func cpuOf(l Limit) string {
	if l.LimitMilli == 0 {
		return "{}"
	}
	s := fmt.Sprintf("{limit: %dm", l.LimitMilli)
	if l.BurstMilli > 0 {
		s += fmt.Sprintf(", burst: %dms", l.BurstMilli*int64(Period/time.Millisecond)/1000)
	}
	return s + "}"
}

// Spec is the workload's experiment: an unlimited config and one per
// limit, each running for runFor with the same load and seed.
func (w Workload) Spec(runFor time.Duration) (*experiment.Experiment, error) {
	t, err := template.ParseFS(specs, "specs/"+w.Name+".yaml")
	if err != nil {
		return nil, err
	}
	type config struct{ Name, CPU string }
	data := struct {
		Duration string
		Configs  []config
	}{Duration: runFor.String()}
	for _, l := range append([]Limit{{Name: "unlimited"}}, w.Limits...) {
		data.Configs = append(data.Configs, config{l.Name, cpuOf(l)})
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, err
	}
	return experiment.Parse(b.Bytes(), w.Name+".yaml")
}

// Run runs the workload's experiment on b into dir.
func (w Workload) Run(ctx context.Context, b runner.Backend, dir string, runFor time.Duration, log io.Writer) error {
	e, err := w.Spec(runFor)
	if err != nil {
		return err
	}
	_, err = runner.Run(ctx, e, b, runner.Options{Dir: dir, Log: log})
	return err
}

// Row is one limit of one workload: predicted against measured.
type Row struct {
	Workload, What                string
	Limit                         string
	PredictedRatio, MeasuredRatio float64
	PredictedRatioWorst           float64
	PredictedRatioBest            float64
	// PredictedLow and PredictedHigh are advise's interval (the spread over
	// the unlimited run's time blocks, and the slice bound); InWidenedInterval
	// says whether the measured share lies inside it widened by
	// advise.Tolerance.
	PredictedLow, PredictedHigh float64
	InWidenedInterval           bool
	// SliceBound is the throttled share with the runtime other CPUs'
	// slices can hold taken out of the quota (0 for a one-CPU group).
	SliceBound                       float64 `json:",omitempty"`
	PredictedP99Ms, MeasuredP99AddMs float64
	MeasuredPeriods                  uint64
	UnlimitedMean, UnlimitedMax10ms  float64
	// CPU seconds the group used in the unlimited and the limited run, and
	// (wall-clock demand) what the replay predicts is lost under the limit.
	WorkUnlimitedS, WorkLimitedS, PredictedLostS float64
	// Cores the rest of the machine (other users; not the run's groups or
	// its load generator) used during the unlimited and the limited run
	// (record.Run.HostOtherCores); nil when unknown.
	OthersUnlimited, OthersLimited *float64 `json:",omitempty"`
	// Pass: the pooled prediction is within advise.Tolerance of the
	// measurement.
	Pass bool
	// Why lists what may explain a miss.
	Why []string `json:",omitempty"`
}

// Compare predicts from the unlimited run in dir and reads what the limited
// runs measured. Others' load is each run's own host_other_cores (the local
// backend measures it; unknown stays unknown).
func (w Workload) Compare(dir string) ([]Row, error) {
	unl, err := record.ReadDemand(dir, "unlimited", w.Instance)
	if err != nil {
		return nil, err
	}
	var points []advise.Point
	for _, l := range w.Limits {
		points = append(points, advise.Point{LimitMilli: l.LimitMilli, BurstMilli: l.BurstMilli, Period: Period})
	}
	evs, err := advise.EvaluateIntervals(unl.Demand, points, advise.Options{WallClock: w.WallClock})
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
	baseP99, err := w.p99Of(dir, byConfig["unlimited"])
	if err != nil {
		return nil, err
	}
	var rows []Row
	for i, l := range w.Limits {
		r := byConfig[l.Name]
		if r == nil {
			return nil, fmt.Errorf("%s: no run of %s", dir, l.Name)
		}
		m, err := record.ReadDemand(dir, l.Name, w.Instance)
		if err != nil {
			return nil, err
		}
		p99, err := w.p99Of(dir, r)
		if err != nil {
			return nil, err
		}
		ratio := 0.0
		if m.CPUStat.Periods > 0 {
			ratio = float64(m.CPUStat.ThrottledPeriods) / float64(m.CPUStat.Periods)
		}
		e := evs[i]
		lo, hi := e.ThrottledRatioRange[0], e.ThrottledRatioRange[1]
		row := Row{Workload: w.Name, What: w.What, Limit: points[i].String(),
			PredictedRatio: e.ThrottledRatio, PredictedRatioWorst: e.ThrottledRatioWorst, PredictedRatioBest: e.ThrottledRatioBest, MeasuredRatio: ratio,
			PredictedLow: lo, PredictedHigh: hi, InWidenedInterval: Within(ratio, lo, hi),
			PredictedP99Ms: e.DelayP99Ms, MeasuredP99AddMs: p99 - baseP99, MeasuredPeriods: m.CPUStat.Periods,
			UnlimitedMean: unl.Demand.MeanCores(), UnlimitedMax10ms: unl.Demand.MaxCores(),
			WorkUnlimitedS: unl.Demand.Work().Seconds(), WorkLimitedS: m.Demand.Work().Seconds(), PredictedLostS: e.LostSeconds,
			OthersUnlimited: byConfig["unlimited"].HostOtherCores, OthersLimited: r.HostOtherCores,
			Pass: math.Abs(e.ThrottledRatio-ratio) <= advise.Tolerance(ratio)}
		if e.ThrottledRatioSliceBound != nil {
			row.SliceBound = *e.ThrottledRatioSliceBound
		}
		if !row.Pass {
			row.Why = whyMissed(row)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// Within reports whether a measured share lies inside [lo, hi] widened by
// advise.Tolerance on each side: the validation's target.
func Within(measured, lo, hi float64) bool {
	return measured >= lo-advise.Tolerance(lo) && measured <= hi+advise.Tolerance(hi)
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
	if o := r.OthersLimited; o != nil && *o > 0.5 {
		why = append(why, fmt.Sprintf("the rest of the machine used %.2f cores during the limited run, of %d: the group competed for CPU, which stretches its work in time",
			*o, runtime.NumCPU()))
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

// p99Of is the p99 latency of the run's requests (ms), or for the burst
// worker the p99 wall time of its busy phases.
func (w Workload) p99Of(dir string, r *record.Run) (float64, error) {
	if w.Instance != "burst" {
		return r.Summary.Latency.P99, nil
	}
	cs, err := record.ReadBurstCycles(record.RunIDDir(dir, r.ID), "burst")
	if err != nil {
		return 0, err
	}
	var v []float64
	for _, c := range cs {
		v = append(v, c.BusyWallMs)
	}
	if len(v) == 0 {
		return 0, nil
	}
	sort.Float64s(v)
	return v[min(len(v)-1, int(math.Ceil(0.99*float64(len(v))))-1)], nil
}
