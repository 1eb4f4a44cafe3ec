package advise

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
)

// Target is what the user accepts: a throttled share of periods and, if
// MaxDelay is set, a p99 added delay.
type Target struct {
	MaxThrottled float64       `json:"max_throttled_periods_ratio"`
	MaxDelay     time.Duration `json:"-"`
	MaxDelayMs   float64       `json:"max_added_delay_p99_ms,omitempty"`
}

// DefaultMaxThrottled is the throttled share of periods every caller aims
// at when told nothing else: advise, check and the agent's first target
// alike, so that they answer the same question by default (docs/advise.md
// says why 5%).
const DefaultMaxThrottled = 0.05

// DefaultTarget returns the target of advise, check and the agent when none
// is given.
func DefaultTarget() Target { return Target{MaxThrottled: DefaultMaxThrottled} }

// WithDefaults returns t with advise's defaults applied: DefaultTarget's
// throttled share when t sets neither bound, no bound on the share when
// only a delay is set. The one place of the defaults.
func (t Target) WithDefaults() Target {
	if t.MaxThrottled <= 0 && t.MaxDelay <= 0 {
		t.MaxThrottled = DefaultMaxThrottled
	}
	if t.MaxThrottled <= 0 {
		t.MaxThrottled = 1
	}
	t.MaxDelayMs = float64(t.MaxDelay) / 1e6
	return t
}

// Meets reports whether e is within t.
func (t Target) Meets(e Evaluation) bool {
	if e.ThrottledRatio > t.MaxThrottled {
		return false
	}
	if t.MaxDelay > 0 && e.Saturated {
		return false // work waits without end
	}
	return t.MaxDelay <= 0 || e.DelayP99Ms <= float64(t.MaxDelay)/1e6
}

// Request says what to evaluate.
type Request struct {
	// Periods to evaluate (default 100 ms).
	Periods []time.Duration
	// Limits in millicores added to the grid (--limit).
	Limits []int64
	// GridSize is how many limits the default grid has (default 25); each
	// is evaluated without burst and with a burst equal to the limit.
	GridSize int
	Target   Target
	// AllDelays replays every point in full. By default only the band is:
	// the points the advice shows or decides on with their delays (the rows
	// around the knee, the recommendation without and with burst, the
	// coarse recommenders' limits). Every other point is counted in one pass
	// over the period sums (Evaluation.CountsOnly): its periods, throttled
	// periods and shares are exact, its throttled time, bursts and delays
	// are not given. The recommendation is the same either way.
	AllDelays bool
	// Options tune the evaluations (Options.Full is Advise's own).
	Options
}

// Sampled describes the samples the advice comes from.
type Sampled struct {
	Source          string  `json:"source"`
	DurationSeconds float64 `json:"duration_seconds"`
	Samples         int     `json:"samples"`
	ExcludedSeconds float64 `json:"excluded_seconds,omitempty"`
	MeanCores       float64 `json:"mean_cores"`
	MaxCores10ms    float64 `json:"max_cores_10ms"`
	// Cores is the parallelism the replay serves held-back work on: the
	// CPUs the group ran on where the samples carry a per-CPU split, else
	// a bound from the usage alone (CoresBound).
	Cores int `json:"cores"`
	// CPUs is how many CPUs the group ran on (each with 2% or more of its
	// CPU time), CPUsAtOnce the most it ran on within one sample (each for
	// a tenth of it or more), and CPUSeconds its CPU time on each CPU: from
	// the kernel's per-CPU counters (Demand.PerCPU), absent without them.
	CPUs       int       `json:"cpus_used,omitempty"`
	CPUsAtOnce int       `json:"cpus_at_once_10ms,omitempty"`
	CPUSeconds []float64 `json:"cpu_seconds_by_cpu,omitempty"`
	// SliceModel is set when the throttling was replayed with the kernel's
	// per-CPU 5 ms slices over the recorded split (more than one CPU).
	SliceModel bool     `json:"per_cpu_slice_model,omitempty"`
	CPUStat    cfs.Stat `json:"cpu_stat"`
	// Phases is how many phases of the period were replayed.
	Phases int `json:"phases"`
	// WallClock: the demand was replayed as bound to wall-clock time (work
	// that finds the quota spent is lost, not delayed).
	WallClock bool `json:"wall_clock_demand,omitempty"`
	// Limit is the group's own quota while sampled, if it had one, and
	// PeriodUsec its period (0: the default 100 ms).
	LimitMilli int64 `json:"limit_millicores,omitempty"`
	PeriodUsec int64 `json:"period_us,omitempty"`
}

// Recommendation is the smallest limit on the grid that meets the target,
// without burst (the Evaluation's fields) and with burst (WithBurst).
type Recommendation struct {
	Evaluation
	Target Target `json:"target"`
	// Met is false when no point on the grid meets the target; then the
	// evaluation is the largest limit's.
	Met bool `json:"met"`
	// LowerBound is set when the group was throttled while sampled: the
	// demand above its limit was never seen, so the advice is at least this.
	LowerBound bool `json:"lower_bound"`
	// Reconstructed is set when the demand was sampled under a limit that
	// throttled and rebuilt from the throttling counters (Reconstruct): the
	// most bursty demand they allow, so the advice errs high.
	Reconstructed bool        `json:"reconstructed,omitempty"`
	WithBurst     *Evaluation `json:"with_burst,omitempty"`
	// Basis says which end of the interval the recommendation rests on.
	Basis string `json:"basis"`
}

// Baseline is what a coarse recommender would set from the same samples,
// and what the replay says that limit would cause.
type Baseline struct {
	Name string `json:"name"`
	How  string `json:"how"`
	// Windows is how many averaging windows the percentile was taken over
	// (they step by 1 s, so they overlap: a recorder that keeps one value
	// per window would have seen span/window of them).
	Windows int `json:"windows,omitempty"`
	// Missing says why there is no evaluation (samples shorter than one
	// window).
	Missing string `json:"missing,omitempty"`
	// Evaluation is nil when the baseline is missing.
	*Evaluation `json:"evaluation,omitempty"`
}

// Advice is the whole answer.
type Advice struct {
	Evaluations    []Evaluation   `json:"evaluations"`
	Recommendation Recommendation `json:"recommendation"`
	Baselines      []Baseline     `json:"baselines"`
	Sampled        Sampled        `json:"sampled"`
	// Window is the window the advice rests on: its blocks and whether
	// they agree.
	Window Window `json:"window"`
	// Audit is the replay at the group's own limit against the kernel's
	// count over the same samples, where it had a limit (nil otherwise).
	Audit *Audit `json:"audit,omitempty"`
	// Knee is where the throttled share crosses KneeShares and the
	// target's share, each as a range of limits (kneeOf): from the
	// optimistic end of the intervals to the pessimistic one.
	Knee []KneeRange `json:"knee,omitempty"`
	// Spike is the window's single spike where its block alone would have
	// changed the advice: counted once over the window, its block judged
	// without it (a warning says so; nil otherwise).
	Spike *Spike `json:"spike,omitempty"`
	// Runtime is the runtime inside a live group and its parallelism to
	// set with the limit (AddRuntime; nil when not read).
	Runtime *RuntimeAdvice `json:"runtime,omitempty"`
	// Startup is the boost of the start-up at the beginning of the demand,
	// the part the advice leaves out (AddStartupBoost; nil when none).
	Startup  *StartupAdvice `json:"startup,omitempty"`
	Warnings []string       `json:"warnings,omitempty"`
}

// Grid returns the default limits for d: n limits from about the mean use
// to the most cores it used at once (where nothing can be throttled),
// spaced evenly in log and rounded to round millicores.
func Grid(d *Demand, n int) []int64 {
	if n <= 0 {
		n = 25
	}
	lo := max(d.MeanCores()*1000, 10)
	hi := max(d.Bound()*1000, lo*1.01)
	seen := map[int64]bool{}
	var out []int64
	for i := 0; i < n; i++ {
		v := lo * math.Pow(hi/lo, float64(i)/float64(n-1))
		m := roundMilli(v)
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

// roundMilli rounds up to 10m under 1 CPU, 50m under 4, 100m above.
func roundMilli(v float64) int64 {
	step := 10.0
	switch {
	case v >= 4000:
		step = 100
	case v >= 1000:
		step = 50
	}
	return int64(math.Ceil(v/step-1e-9) * step)
}

// Advise evaluates the grid (and the baselines) over d and decides the
// advice (Decide): the one path from samples to advice.
func Advise(d *Demand, req Request, sampled Sampled) (*Advice, error) {
	if len(req.Periods) == 0 {
		req.Periods = []time.Duration{100 * time.Millisecond}
	}
	d = d.Pinned()
	d, startup := afterStartup(d)
	limits := append(Grid(d, req.GridSize), req.Limits...)
	baselines := baselinesOf(d)
	for _, b := range baselines {
		if b.Milli > 0 {
			limits = append(limits, b.Milli)
		}
	}
	sort.Slice(limits, func(i, j int) bool { return limits[i] < limits[j] })
	var points []Point
	for _, per := range req.Periods {
		seen := map[int64]bool{}
		for _, l := range limits {
			if seen[l] {
				continue
			}
			seen[l] = true
			p := Point{LimitMilli: l, Period: per}
			if err := p.Check(); err != nil {
				if len(req.Limits) > 0 && contains(req.Limits, l) {
					return nil, err
				}
				continue // a grid point too small for this period
			}
			points = append(points, p, Point{LimitMilli: l, BurstMilli: l, Period: per})
		}
	}
	widen := ""
	if len(d.Warnings) > 0 {
		widen = "part of the samples is not valid (see the warnings): only the rest is replayed"
	}
	if blockCount(d.Duration()) < 2 {
		w := fmt.Sprintf("the window (%s) is shorter than two blocks of %s: the data give no interval", d.Duration().Round(time.Millisecond), MinBlock)
		if widen != "" {
			widen += "; "
		}
		widen += w
	}
	w, err := newWindows(d, points, req.Options, widen)
	if err != nil {
		return nil, err
	}
	// Every point counted in one pass, or replayed in full (AllDelays).
	if err := w.evaluate(w.all(), req.AllDelays); err != nil {
		return nil, err
	}
	evs := w.evs
	sampled.DurationSeconds = d.Duration().Seconds()
	sampled.Samples = len(d.At)
	sampled.ExcludedSeconds = d.Excluded.Seconds()
	sampled.Phases, sampled.WallClock = max(req.Phases, 0), req.WallClock
	if sampled.Phases == 0 {
		sampled.Phases = 10
	}
	sampled.MeanCores, sampled.MaxCores10ms, sampled.Cores = d.MeanCores(), d.MaxCores(), int(d.Bound())
	if d.PerCPU != nil {
		sampled.CPUs, sampled.CPUsAtOnce = d.CPUsUsed(), d.CPUsAtOnce()
		for _, u := range d.PerCPU {
			sampled.CPUSeconds = append(sampled.CPUSeconds, (u[len(u)-1] - u[0]).Seconds())
		}
		sampled.SliceModel = !req.WallClock && d.Split() != nil
	}
	var audit *Audit
	if sampled.LimitMilli > 0 {
		per := time.Duration(sampled.PeriodUsec) * time.Microsecond
		if per <= 0 {
			per = 100 * time.Millisecond
		}
		if p := (Point{LimitMilli: sampled.LimitMilli, Period: per}); p.Check() == nil {
			if audit, err = AuditAt(d, p, sampled.CPUStat, req.Options); err != nil {
				return nil, err
			}
		}
		if audit != nil {
			widenBy(evs, audit.Error)
		}
	}
	ev := &Evaluated{Audit: audit, Evaluations: evs, Blocks: w.be, BlockDemands: blockDemands(w.blocks), Higher: w.higher, Baselines: baselines,
		Period: req.Periods[0], Sampled: sampled, Rebuilt: d.Moved > 0, Moved: d.Moved, Capped: d.Capped, Widened: widen, Level: &w.level, Warnings: slices.Clone(d.Warnings)}
	if w.spike != nil {
		ev.Spike = &SpikeFree{Spike: *w.spike, Blocks: w.spikeIx, Evaluations: w.sbe, Demands: blockDemands(w.spikeD)}
	}
	if startup != "" {
		ev.Warnings = append(ev.Warnings, startup)
	}
	a := Decide(ev, req.Target)
	// The band: replay in full, in every window, the points the advice
	// shows or decides on with their delays, and decide again, until it
	// rests on no point only counted. A point only counted has no delays,
	// so it meets a delay budget as far as Decide can tell: the advice can
	// only move up to points replayed, never past one that meets the target.
	for {
		need := missing(band(a), w.full)
		if len(need) == 0 {
			break
		}
		if err := w.evaluate(need, true); err != nil {
			return nil, err
		}
		if audit != nil {
			widenBy(evs, audit.Error)
		}
		a = Decide(ev, req.Target)
	}
	// The knee, refined between the grid's limits (counted, in every
	// window, with the same intervals): the recommendation is the grid's.
	// Over more than KneeRefineSpan of samples it is read off the grid
	// (its ranges say how far apart the limits there are).
	if d.Duration() > req.Options.kneeRefineSpan() {
		return a, nil
	}
	knee, err := w.refineKnee(req.Target.WithDefaults(), req.Periods[0], audit)
	if err != nil {
		return nil, err
	}
	if len(knee) == 0 {
		return a, nil
	}
	ev.KneePoints = knee
	return Decide(ev, req.Target), nil
}

// KneeRefineSpan is the longest window whose knee advise refines between
// the grid's limits. The refinement's limits lie near the mean use, where
// the one counting pass meets near ties and replays whole windows: on a
// day of samples it cost a third more than the rest of the advice, and a
// day's knee moves with its hours more than a grid step anyway.
const KneeRefineSpan = time.Hour

// maxKneeRounds bounds the knee's refinement: each round halves every gap
// it refines (a grid step of 8% to 1% in three rounds) or steps twice as
// far below the lowest limit evaluated as the round before.
const maxKneeRounds = 10

// refineKnee evaluates limits between w's (at period, without burst) where
// the knee's ends lie (kneeGaps), round after round, until each end's next
// lower limit evaluated is within kneeStep of it. Each round's points are
// counted in one pass in every window and their intervals set as the
// grid's, widened by the audit's error. It returns the evaluations added.
func (w *windows) refineKnee(t Target, period time.Duration, audit *Audit) ([]Evaluation, error) {
	var added []Evaluation
	for range w.o.kneeRounds() {
		gaps := kneeGaps(slices.Concat(w.evs, added), t, period)
		if len(gaps) == 0 {
			break
		}
		pts := make([]Point, len(gaps))
		for i, m := range gaps {
			pts[i] = Point{LimitMilli: m, Period: period}
		}
		v := w.over(pts)
		if err := v.evaluate(v.all(), false); err != nil {
			return nil, err
		}
		if audit != nil {
			widenBy(v.evs, audit.Error)
		}
		added = append(added, v.evs...)
	}
	return added, nil
}

// band returns the indices of a's evaluations that its text and its
// decision rest on with delays: the rows around the knee (kneeRows), the
// recommendation without and with burst (the largest limit when none meets
// the target), and the smallest limit meeting the target over the whole
// window. The coarse recommenders' limits are not in it: they usually lie
// far below the knee, where a replay costs most (the queue of work waiting
// grows without end), and their throttled share says what they would cause;
// their delays are given where they fall in the band.
func band(a *Advice) []int {
	var out []int
	per := a.Recommendation.Point().Period
	for i, show := range kneeRows(a) {
		e := a.Evaluations[i]
		at := func(limit, burst int64) bool {
			return limit > 0 && e.LimitMilli == limit && e.BurstMilli == burst && e.Point().Period == per
		}
		in := show || at(a.Recommendation.LimitMilli, 0) || at(a.Window.WholeWindowLimitMilli, 0)
		if wb := a.Recommendation.WithBurst; wb != nil {
			in = in || e.Point() == wb.Point()
		}
		if in {
			out = append(out, i)
		}
	}
	return out
}

// missing returns the indices of ix whose point is not replayed in full.
func missing(ix []int, full []bool) []int {
	var out []int
	for _, i := range ix {
		if !full[i] {
			out = append(out, i)
		}
	}
	return out
}

// Evaluated is demand already replayed through the quota model: what the
// advice is decided from. Advise makes it from samples; the node agent's
// summary from its blocks of evaluations, without raw samples.
type Evaluated struct {
	// Audit is the replay at the group's own limit against the kernel's
	// count, where it had one (its error already widens the intervals).
	Audit *Audit
	// Evaluations are over the whole window: every candidate limit without
	// and with burst, and each baseline's limit without burst.
	Evaluations []Evaluation
	// Blocks[b][i] is Evaluations[i] over block b alone, oldest first;
	// nil with fewer than two blocks.
	Blocks [][]Evaluation
	// BlockDemands describes the window's blocks, oldest first.
	BlockDemands []BlockDemand
	// Higher[i] is Evaluations[i] with the use higher by Level.High
	// (LevelSpread where Level is nil; nil: not checked).
	Higher []Evaluation
	// Spike is the window's single spike, where it has one (spikeOf): its
	// blocks without it, which the recommendation and the window's
	// judgement take for them when that changes the advice (nil: none).
	Spike *SpikeFree
	// Level is how the demand's level moved within the window and where
	// the next window's lies (LevelOf): Decide says how it moved and what
	// the recommendation assumed. nil: not measured (no warning).
	Level *Moves
	// Baselines are the coarse recommenders' limits (BaselineRules).
	Baselines []BaselineLimit
	// Period is the period the recommendation is made at.
	Period time.Duration
	// Sampled describes the samples; its DurationSeconds is the window's
	// span and its CPUStat.ThrottledPeriods whether the group was throttled
	// while sampled.
	Sampled Sampled
	// Rebuilt says the demand of a throttled group was rebuilt from its
	// throttling counters (cfs.Reconstruct); Moved and Capped are the
	// rebuild's account (cfs.Backlog).
	Rebuilt       bool
	Moved, Capped time.Duration
	// Widened says why the intervals were widened ("": they were not).
	Widened string
	// Warnings about the samples come first in the advice's, then the
	// level's (Level).
	Warnings []string
	// KneePoints are evaluations (without burst, at Period, with their
	// intervals) of limits between Evaluations' that only the knee is read
	// from (Advice.Knee), never the recommendation: advise refines the
	// knee with them; nil: the knee is read from Evaluations alone.
	KneePoints []Evaluation
}

// Decide is the advice from evaluated demand, for target t (with
// Target.WithDefaults): the smallest limit that meets t over the window,
// in every block and with the use higher by the level (Level, at least
// LevelSpread), without and with
// burst (the recommendation), the window's judgement, the baselines and the
// warnings. Every path to advice ends here: advise, the agent's summaries
// (and so check and advise --prometheus/--agent, which read the agent's),
// the reports' Advice section.
func Decide(ev *Evaluated, t Target) *Advice {
	t = t.WithDefaults()
	evs := ev.Evaluations
	a := &Advice{Evaluations: evs, Sampled: ev.Sampled, Warnings: slices.Clone(ev.Warnings), Audit: ev.Audit}
	higherBy := LevelSpread
	if ev.Level != nil {
		higherBy = ev.Level.High - 1
		a.Warnings = append(a.Warnings, ev.Level.Warnings(time.Duration(ev.Sampled.DurationSeconds*float64(time.Second)))...)
	}
	be := blockEvals(ev.Blocks)
	var whole int
	a.Recommendation, whole = recommend(evs, be, ev.Higher, higherBy, t, ev.Period)
	a.Knee = kneeOf(slices.Concat(evs, ev.KneePoints), t, ev.Period)
	a.Window = window(ev.Sampled.DurationSeconds, ev.BlockDemands, be, ev.BlockDemands, be, evs, t, whole, a.Recommendation, ev.Widened)
	// A single spike: its blocks judged without it, where that changes the
	// recommendation or the window's judgement.
	if jbe, jbd := judgeSpike(be, ev.BlockDemands, ev.Spike); ev.Spike != nil && len(be) > 1 {
		r, _ := recommend(evs, jbe, ev.Higher, higherBy, t, ev.Period)
		w := window(ev.Sampled.DurationSeconds, ev.BlockDemands, be, jbd, jbe, evs, t, whole, r, ev.Widened)
		if r.LimitMilli != a.Recommendation.LimitMilli || r.Met != a.Recommendation.Met || w.Stationary != a.Window.Stationary {
			s := ev.Spike.Spike
			if a.Recommendation.Met {
				s.BlockLimitMilli = a.Recommendation.LimitMilli
			}
			for _, b := range ev.Spike.Blocks {
				w.Blocks[b].Spike = true
				s.BlockThrottledRatio = max(s.BlockThrottledRatio, w.Blocks[b].ThrottledRatio)
			}
			r.Basis += "; one spike counted once over the window, not in its block"
			a.Recommendation, a.Window, a.Spike = r, w, &s
			a.Warnings = append(a.Warnings, spikeWarning(s, w, r))
		}
	}
	// Throttled while sampled: the demand above the limit is unseen unless
	// the rebuild (Reconstruct) recovered it (then the advice errs high, not
	// low) from streaks short enough to move.
	a.Recommendation.LowerBound = ev.Sampled.CPUStat.ThrottledPeriods > 0 && (!ev.Rebuilt || ev.Capped > 0)
	a.Recommendation.Reconstructed = ev.Moved > 0
	if !a.Window.Stationary {
		a.Warnings = append(a.Warnings, a.Window.Nonstationary)
	}
	if ev.Widened != "" {
		a.Warnings = append(a.Warnings, "intervals widened by max(0.07, 30%): "+ev.Widened)
	}
	for _, b := range ev.Baselines {
		bl := Baseline{Name: b.Name, How: b.How, Windows: b.Windows, Missing: b.Missing}
		for i := range evs {
			if b.Milli > 0 && evs[i].LimitMilli == b.Milli && evs[i].BurstMilli == 0 && evs[i].PeriodUsec == int64(ev.Period/time.Microsecond) {
				bl.Evaluation = &evs[i]
				break
			}
		}
		if bl.Evaluation == nil && bl.Missing == "" && b.Milli > 0 {
			// krr's 1m for an idle container: no quota can be set there.
			if err := (Point{LimitMilli: b.Milli, Period: ev.Period}).Check(); err != nil {
				bl.Missing = err.Error()
			}
		}
		a.Baselines = append(a.Baselines, bl)
	}
	return a
}

func contains(s []int64, v int64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// recommend picks the smallest limit meeting t over the whole window, in
// every block and with the use higherBy higher (higher; nil: not
// checked), the upper end of its interval but for the slice bound, without
// and with burst, at the first period. It also returns the index of the smallest limit that
// meets t over the whole window pooled (-1: none).
func recommend(evs []Evaluation, be blockEvals, higher []Evaluation, higherBy float64, t Target, period time.Duration) (Recommendation, int) {
	r := Recommendation{Target: t, Basis: "meets the target in every block"}
	if len(be) < 2 {
		r.Basis = "meets the target over the window (one block)"
	}
	if higher != nil {
		r.Basis += fmt.Sprintf(" and with %.0f%% more use", higherBy*100)
	}
	var largest *Evaluation
	whole := -1
	for i := range evs {
		e := &evs[i]
		if e.PeriodUsec != int64(period/time.Microsecond) {
			continue
		}
		all := meetsAll(t, evs, be, higher, i)
		if e.BurstMilli == 0 {
			if largest == nil || e.LimitMilli > largest.LimitMilli {
				largest = e
			}
			if t.Meets(*e) && (whole < 0 || e.LimitMilli < evs[whole].LimitMilli) {
				whole = i
			}
			if all && (!r.Met || e.LimitMilli < r.LimitMilli) {
				r.Evaluation, r.Met = *e, true
			}
		} else if all && (r.WithBurst == nil || e.LimitMilli < r.WithBurst.LimitMilli) {
			r.WithBurst = e
		}
	}
	if !r.Met && largest != nil {
		r.Evaluation = *largest
	}
	if r.WithBurst != nil && r.Met && r.WithBurst.LimitMilli >= r.LimitMilli {
		r.WithBurst = nil // burst buys nothing on this grid
	}
	return r, whole
}

// window describes the blocks (shown, their evaluations shownBE), judges
// stationarity at the limit the whole window would recommend over the
// blocks as judged (judged, judgedBE: a spike's blocks without it), and
// says how long to sample.
func window(seconds float64, shown []BlockDemand, shownBE blockEvals, judged []BlockDemand, be blockEvals, evs []Evaluation, t Target, whole int, r Recommendation, widen string) Window {
	blocks := shown
	w := Window{Seconds: seconds, Stationary: true, Widened: widen}
	w.BlockSeconds = w.Seconds / float64(len(blocks))
	rec := -1
	for i := range evs {
		if evs[i].LimitMilli == r.LimitMilli && evs[i].BurstMilli == 0 && evs[i].PeriodUsec == r.PeriodUsec {
			rec = i
			break
		}
	}
	start := 0.0
	for b, sub := range blocks {
		blk := Block{StartSeconds: start, EndSeconds: start + sub.Seconds, MeanCores: sub.MeanCores, MaxCores10ms: sub.MaxCores10ms}
		start = blk.EndSeconds
		if rec >= 0 {
			if len(shownBE) > 1 {
				blk.ThrottledRatio = shownBE[b][rec].ThrottledRatio
			} else {
				blk.ThrottledRatio = evs[rec].ThrottledRatio
			}
		}
		w.Blocks = append(w.Blocks, blk)
	}
	if whole < 0 {
		return w
	}
	w.WholeWindowLimitMilli = evs[whole].LimitMilli
	diff, ok := stationarity(t, judged, be, whole)
	if ok {
		return w
	}
	w.Stationary = false
	var in, out, inSpan float64
	names := make([]string, 0, len(diff))
	worst := 0.0
	for _, b := range diff {
		blk := &w.Blocks[b]
		blk.Differs = true
		in += blk.MeanCores * (blk.EndSeconds - blk.StartSeconds)
		inSpan += blk.EndSeconds - blk.StartSeconds
		worst = max(worst, be[b][whole].ThrottledRatio)
		names = append(names, fmt.Sprintf("%.0f-%.0f s (%.3f cores)", blk.StartSeconds, blk.EndSeconds, blk.MeanCores))
	}
	for b := range w.Blocks {
		if !w.Blocks[b].Differs {
			out += w.Blocks[b].MeanCores * (w.Blocks[b].EndSeconds - w.Blocks[b].StartSeconds)
		}
	}
	rest := ""
	if outSpan := w.Seconds - inSpan; outSpan > 0 {
		rest = fmt.Sprintf(" against %.3f cores in the other blocks", out/outSpan)
	}
	// See each regime several times: five windows, at least 10 minutes.
	w.SampleForSeconds = max(5*w.Seconds, 600)
	w.Nonstationary = fmt.Sprintf("the demand is not stationary over the %s window: at %s (what the whole window would advise) blocks differ, up to %.1f%% throttled in one: %s%s; the recommendation takes the worst block; sample for %s or longer (24h for daily cycles) to see each change more than once",
		fmtSeconds(w.Seconds), formatMilli(evs[whole].LimitMilli), 100*worst, strings.Join(names, ", "), rest, fmtSeconds(w.SampleForSeconds))
	return w
}

// fmtSeconds writes a span the way --duration takes it.
func fmtSeconds(s float64) string {
	out := time.Duration(s * float64(time.Second)).Round(time.Second).String()
	if strings.HasSuffix(out, "m0s") {
		out = strings.TrimSuffix(out, "0s")
	}
	if strings.HasSuffix(out, "h0m") {
		out = strings.TrimSuffix(out, "0m")
	}
	return out
}

// KubernetesSnippet is the resources: stanza for the recommendation. The
// request is left to the user: a limit says nothing about what to reserve.
func KubernetesSnippet(e Evaluation) string {
	return fmt.Sprintf("resources:\n  limits:\n    cpu: %s\n", formatMilli(e.LimitMilli))
}

// BurstHowTo says how to set a burst on plain cgroups (Kubernetes has no
// field for it).
func BurstHowTo(e Evaluation) string {
	return fmt.Sprintf(`cgroup v2: echo "%d %d" > GROUP/cpu.max; echo %d > GROUP/cpu.max.burst
cgroup v1: echo %d > GROUP/cpu.cfs_period_us; echo %d > GROUP/cpu.cfs_quota_us; echo %d > GROUP/cpu.cfs_burst_us
(the quota first: the kernel refuses a burst above the quota; Kubernetes has no burst field, so set it on the pod's
 container group after start, or through the runtime: runc/crun take linux.resources.cpu.burst)`,
		e.QuotaUsec, e.PeriodUsec, e.BurstUsec, e.PeriodUsec, e.QuotaUsec, e.BurstUsec)
}
