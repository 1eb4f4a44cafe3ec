package advise

import (
	"fmt"
	"math"
	"time"
)

// RuntimeFacts is what was read of the runtime inside a live group, as
// AddRuntime takes it (runtimes.ForAdvice reads it from /proc): read once
// when sampling begins, not every sample.
type RuntimeFacts struct {
	// Runtime names it ("go", "jvm"), Version its version where readable,
	// PID the process it was read from.
	Runtime, Version string
	PID              int
	// Setting is the knob that decides its parallelism as the runtime
	// spells it; Set whether the process sets it, From where, Value the
	// count set.
	Setting string
	Set     bool
	From    string
	Value   int
	// ContainerAware reports whether its default reads the group's limit,
	// AwareWhy why.
	ContainerAware bool
	AwareWhy       string
	// CPUs is the process's affinity mask's size; Runnable the group's
	// threads runnable at once when read (one reading, not a peak).
	CPUs, Runnable int
	// Procs is the parallelism the runtime will use under a limit of
	// limitCores (0: none): its setting or its default rule, and which in
	// words; 0 when it cannot be said.
	Procs func(limitCores float64) (n int, rule string)
	// Spell writes a parallelism n as the runtime takes it
	// ("GOMAXPROCS=1"); "" where it has no such knob.
	Spell func(n int) string
}

// RuntimeAdvice is the runtime inside the advised group and the
// parallelism to set with the recommended limit.
type RuntimeAdvice struct {
	// Runtime names it ("go", "jvm", ...; runtimes.Kind), Version its
	// version where readable, PID the process it was read from.
	Runtime string `json:"runtime"`
	Version string `json:"version,omitempty"`
	PID     int    `json:"pid"`
	// Setting is the knob that decides its parallelism, spelled as the
	// runtime takes it ("GOMAXPROCS", "-XX:ActiveProcessorCount"); Set
	// whether the process sets it, From where (environ, cmdline,
	// JAVA_TOOL_OPTIONS), Value the count set.
	Setting string `json:"setting"`
	Set     bool   `json:"setting_set"`
	From    string `json:"setting_from,omitempty"`
	Value   int    `json:"setting_value,omitempty"`
	// ContainerAware reports whether its default reads the group's limit;
	// AwareWhy says why.
	ContainerAware bool   `json:"container_aware"`
	AwareWhy       string `json:"container_aware_why,omitempty"`
	// CPUs is the size of the process's affinity mask.
	CPUs int `json:"cpus,omitempty"`
	// Now is the parallelism it uses under the group's limit while
	// sampled (RuleNow: the setting or the runtime's default rule);
	// AtRecommended the one it will use under the recommended limit.
	Now           int    `json:"parallelism_now"`
	RuleNow       string `json:"rule_now"`
	AtRecommended int    `json:"parallelism_at_recommended_limit"`
	RuleAt        string `json:"rule_at_recommended_limit"`
	// Recommended is the parallelism to set with the recommended limit
	// (its cores rounded up, within the CPUs), RecommendedSetting the same
	// spelled as the runtime takes it ("GOMAXPROCS=1",
	// "-XX:ActiveProcessorCount=1"; "" where it has no such knob).
	Recommended        int    `json:"parallelism_recommended"`
	RecommendedSetting string `json:"recommended_setting,omitempty"`
	// RunnableThreads is the threads seen runnable at once when read (one
	// reading at the start of sampling).
	RunnableThreads int `json:"runnable_threads_seen"`
	// Predicted is the replay at the recommended limit with its CPU bound
	// set to each parallelism (AtRecommended first, then Recommended where
	// it differs): what each would cause.
	Predicted []RuntimePrediction `json:"predicted,omitempty"`
	// SetRecommended is set when setting Recommended changes the predicted
	// throttled share or p99 added delay by more than their intervals, for
	// the better; Why says what the comparison found.
	SetRecommended bool   `json:"set_recommended"`
	Why            string `json:"why"`
	// DelayBound says which side of the truth the predicted delays err
	// on: "upper" when the demand was sampled under a limit that
	// throttled and rebuilt from the throttling counters as the most
	// bursty demand they allow (the replayed delays are at most these;
	// docs/runtimes.md measures how far above), "lower" when
	// the demand above the limit was never seen, "" when the samples were
	// not throttled (or both apply).
	DelayBound string `json:"added_delay_bound,omitempty"`
}

// RuntimePrediction is the replay at the recommended limit with the CPU
// bound (cfs.Demand.Cores) set to one parallelism.
type RuntimePrediction struct {
	Parallelism int `json:"parallelism"`
	// Cores is the bound the replay used: the parallelism, at most the
	// process's CPUs (more threads than CPUs do not run at once).
	Cores               int     `json:"cores"`
	ThrottledRatio      float64 `json:"throttled_periods_ratio"`
	ThrottledRatioRange *Range  `json:"throttled_periods_ratio_range,omitempty"`
	DelayP99Ms          float64 `json:"added_delay_p99_ms"`
	DelayP99MsRange     *Range  `json:"added_delay_p99_ms_range,omitempty"`
	// QueueP99Ms is what the replay's delay leaves out: the p99 wait the
	// bound itself adds to the demand as sampled, with no limit (work
	// that ran on more threads at once waiting for one of Cores: requests
	// queued behind a smaller pool). 0 when Cores is not below the
	// demand's own parallelism. Replayed as a limit of Cores cores per
	// 10 ms period, the samples' step.
	QueueP99Ms float64 `json:"queueing_p99_ms"`
}

// AddRuntime sets a.Runtime from f: the runtime's parallelism now and
// under the recommended limit, the value to set, and the replay of d at the
// recommended limit with each parallelism as its CPU bound (o as Advise
// took it). warning, if not "", is the one line saying why the runtime, or
// a part of it, was not read; with f nil the group is advised without it.
func AddRuntime(a *Advice, d *Demand, f *RuntimeFacts, warning string, o Options) error {
	if warning != "" {
		a.Warnings = append(a.Warnings, warning)
	}
	if f == nil {
		return nil
	}
	r := a.Recommendation
	ra := RuntimeAt(f, a.Sampled.LimitMilli, r.LimitMilli)
	a.Runtime = ra
	if r.LimitMilli <= 0 || ra.AtRecommended <= 0 {
		ra.Why = "no prediction: " + ra.RuleAt
		return nil
	}
	per := time.Duration(r.PeriodUsec) * time.Microsecond
	if per <= 0 {
		per = 100 * time.Millisecond
	}
	p := Point{LimitMilli: r.LimitMilli, Period: per}
	d, _ = afterStartup(d.Pinned())
	for _, n := range []int{ra.AtRecommended, ra.Recommended} {
		pr, err := predictAt(d, p, n, f.CPUs, o, a.Audit)
		if err != nil {
			return fmt.Errorf("the runtime's parallelism %d at %s: %w", n, p, err)
		}
		ra.Predicted = append(ra.Predicted, pr)
		if n == ra.Recommended && ra.Predicted[0].Cores == pr.Cores {
			ra.Predicted = ra.Predicted[:1] // the same bound: the same replay
			break
		}
	}
	ra.SetRecommended, ra.Why = judgeRuntime(ra)
	ra.DelayBound = delayBound(r)
	return nil
}

// delayBound is the side the replay's delays err on for the recommendation
// r: "upper" for a demand rebuilt from throttled samples, "lower" for one
// whose throttled part was never seen, "" otherwise.
func delayBound(r Recommendation) string {
	switch {
	case r.Reconstructed && !r.LowerBound:
		return "upper"
	case r.LowerBound && !r.Reconstructed:
		return "lower"
	}
	return ""
}

// RuntimeAt is f's runtime advice without the replay: its parallelism
// under the limit now (nowMilli; 0: none) and under the recommended one
// (recMilli), and the value to set with the latter (its cores rounded up,
// within the CPUs). Predicted is empty and Why says so: a caller that
// keeps no demand to replay with another CPU bound (the agent) shows it
// as is; AddRuntime adds the predictions.
func RuntimeAt(f *RuntimeFacts, nowMilli, recMilli int64) *RuntimeAdvice {
	now := float64(nowMilli) / 1000
	rec := float64(recMilli) / 1000
	ra := &RuntimeAdvice{Runtime: f.Runtime, Version: f.Version, PID: f.PID, Setting: f.Setting, Set: f.Set, From: f.From, Value: f.Value,
		ContainerAware: f.ContainerAware, AwareWhy: f.AwareWhy, CPUs: f.CPUs, RunnableThreads: f.Runnable}
	ra.Now, ra.RuleNow = f.Procs(now)
	ra.AtRecommended, ra.RuleAt = f.Procs(rec)
	ra.Recommended = max(MinParallelism(f.Runtime), int(math.Ceil(rec-1e-9)))
	if f.CPUs > 0 {
		ra.Recommended = min(ra.Recommended, f.CPUs)
	}
	ra.RecommendedSetting = f.Spell(ra.Recommended)
	ra.Why = "not replayed with the runtime's parallelism as the CPU bound: " + ra.RuleAt
	return ra
}

// MinParallelism is the fewest threads advise recommends for a runtime:
// 2 for a JVM, whose ergonomics at one processor switch to the serial
// collector, and 2 for Go, as Go's own container default (1.25) keeps: one
// thread runs the requests that arrive together one after another, a wait
// shorter than the 10 ms samples that the CPU replay cannot see
// (f15-gomaxprocs; docs/runtimes.md measures both); 1 for the others.
func MinParallelism(runtime string) int {
	if runtime == "jvm" || runtime == "go" {
		return 2
	}
	return 1
}

// predictAt replays d at p with its CPU bound set to n threads (at most
// cpus, when known). The per-CPU split the samples carry is dropped when
// it spans more CPUs than the bound: n threads could not have run so.
func predictAt(d *Demand, p Point, n, cpus int, o Options, audit *Audit) (RuntimePrediction, error) {
	bound := n
	if cpus > 0 {
		bound = min(n, cpus)
	}
	c := *d
	c.Cores = bound
	if c.PerCPU != nil && d.CPUsUsed() > bound {
		c.PerCPU = nil
	}
	evs, err := EvaluateIntervals(&c, []Point{p}, o)
	if err != nil {
		return RuntimePrediction{}, err
	}
	if audit != nil {
		audit.Widen(evs)
	}
	e := evs[0]
	pr := RuntimePrediction{Parallelism: n, Cores: bound, ThrottledRatio: e.ThrottledRatio, ThrottledRatioRange: e.ThrottledRatioRange,
		DelayP99Ms: e.DelayP99Ms, DelayP99MsRange: e.DelayP99MsRange}
	if q, ok := queueAt(d, bound, o); ok {
		pr.QueueP99Ms = q
	}
	return pr, nil
}

// queueAt is the p99 wait that running d on bound threads adds by itself,
// with no limit: d (at its own parallelism) replayed under bound cores per
// 10 ms period. ok is false when bound is not below d's parallelism (no
// wait) or the replay fails.
func queueAt(d *Demand, bound int, o Options) (float64, bool) {
	if float64(bound) >= d.Bound() {
		return 0, false
	}
	evs, err := EvaluateIntervals(d, []Point{{LimitMilli: int64(bound) * 1000, Period: 10 * time.Millisecond}}, o)
	if err != nil {
		return 0, false
	}
	return evs[0].DelayP99Ms, true
}

// judgeRuntime decides whether setting the recommended parallelism is
// worth it: only where it moves the throttled share or the p99 delay
// beyond the intervals (they do not overlap), and for the better on both.
// The delay compared is the throttling delay plus the queueing the fewer
// threads add (QueueP99Ms, both p99s added: an upper estimate of the p99 of
// the sum): fewer threads that cut throttling but make work wait longer for
// a thread trade one for the other, and are not recommended.
func judgeRuntime(ra *RuntimeAdvice) (bool, string) {
	if len(ra.Predicted) < 2 {
		if ra.RecommendedSetting != "" && ra.Recommended != ra.AtRecommended {
			return false, fmt.Sprintf("%d and %d threads (%s) replay alike on %s: nothing to set", ra.AtRecommended, ra.Recommended, ra.RecommendedSetting, plural(ra.Predicted[0].Cores, "CPU"))
		}
		return false, fmt.Sprintf("%d and %d threads replay alike on %s: nothing to set", ra.AtRecommended, ra.Recommended, plural(ra.Predicted[0].Cores, "CPU"))
	}
	own, rec := ra.Predicted[0], ra.Predicted[1]
	share := apart(own.ThrottledRatio, own.ThrottledRatioRange, rec.ThrottledRatio, rec.ThrottledRatioRange)
	delay := apart(own.DelayP99Ms+own.QueueP99Ms, plusQueue(own.DelayP99MsRange, own.QueueP99Ms), rec.DelayP99Ms+rec.QueueP99Ms, plusQueue(rec.DelayP99MsRange, rec.QueueP99Ms))
	lessThrottled := rec.ThrottledRatio <= own.ThrottledRatio+1e-9 && rec.DelayP99Ms <= own.DelayP99Ms+1e-9
	better := lessThrottled && rec.DelayP99Ms+rec.QueueP99Ms <= own.DelayP99Ms+own.QueueP99Ms+1e-9
	switch {
	case share == 0 && delay == 0:
		return false, fmt.Sprintf("%s predicts the same as the runtime's own %d within the intervals", ra.RecommendedSetting, ra.AtRecommended)
	case better:
		return true, fmt.Sprintf("%s predicts less throttling or delay than the runtime's own %d, beyond the intervals, counting the wait for a thread it adds (p99 %.1f ms)", ra.RecommendedSetting, ra.AtRecommended, rec.QueueP99Ms)
	case lessThrottled:
		return false, fmt.Sprintf("%s trades throttling for queueing: less throttling delay than the runtime's own %d, but work waits for one of %s (p99 %.1f ms) and the two together predict more delay: keep %d",
			ra.RecommendedSetting, ra.AtRecommended, plural(rec.Cores, "thread"), rec.QueueP99Ms, ra.AtRecommended)
	}
	return false, fmt.Sprintf("%s predicts more throttling or delay than the runtime's own %d: keep %d", ra.RecommendedSetting, ra.AtRecommended, ra.AtRecommended)
}

// plusQueue is r moved by q (nil stays nil).
func plusQueue(r *Range, q float64) *Range {
	if r == nil {
		return nil
	}
	return &Range{r[0] + q, r[1] + q}
}

// apart is 0 when x and y are within each other's intervals (they
// overlap), else the sign of y - x.
func apart(x float64, xr *Range, y float64, yr *Range) int {
	lo := func(v float64, r *Range) float64 {
		if r == nil {
			return v
		}
		return r[0]
	}
	hi := func(v float64, r *Range) float64 {
		if r == nil {
			return v
		}
		return r[1]
	}
	switch {
	case hi(y, yr) < lo(x, xr):
		return -1
	case hi(x, xr) < lo(y, yr):
		return 1
	}
	return 0
}

// RuntimeLine is the runtime's one line of the brief answer ("" without
// one).
func RuntimeLine(a *Advice) string {
	ra := a.Runtime
	if ra == nil {
		return ""
	}
	name := ra.Runtime
	if ra.Version != "" {
		name += " " + ra.Version
	}
	set := ra.Setting + " unset"
	if ra.Set {
		set = fmt.Sprintf("%s=%d (%s)", ra.Setting, ra.Value, ra.From)
	}
	s := fmt.Sprintf("Runtime: %s (pid %d), %s: %d threads now, %d under %s; %d runnable at once when read",
		name, ra.PID, set, ra.Now, ra.AtRecommended, formatMilli(a.Recommendation.LimitMilli), ra.RunnableThreads)
	if ra.Setting == "" || len(ra.Predicted) == 0 {
		return s + ". " + ra.Why + "."
	}
	own := ra.Predicted[0]
	s += fmt.Sprintf("; with %d: %s throttled, p99 +%s", own.Parallelism, ShareRange(own.ThrottledRatio, own.ThrottledRatioRange), msRange(own.DelayP99Ms, own.DelayP99MsRange, math.Inf(1), math.Inf(1)))
	if len(ra.Predicted) > 1 {
		rec := ra.Predicted[1]
		s += fmt.Sprintf(", with %d: %s, p99 +%s", rec.Parallelism, ShareRange(rec.ThrottledRatio, rec.ThrottledRatioRange), msRange(rec.DelayP99Ms, rec.DelayP99MsRange, math.Inf(1), math.Inf(1)))
		if rec.QueueP99Ms > 0 {
			s += fmt.Sprintf(" and +%.1f ms waiting for a thread", rec.QueueP99Ms)
		}
	}
	switch ra.DelayBound {
	case "upper":
		s += " (delays at most: rebuilt from throttled samples)"
	case "lower":
		s += " (delays at least: the demand above the limit was not seen)"
	}
	if ra.SetRecommended {
		return s + ". Set " + ra.RecommendedSetting + " with the limit."
	}
	return s + ". No change needed: " + ra.Why + "."
}
