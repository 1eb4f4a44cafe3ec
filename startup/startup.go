package startup

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Profile is a start-up's demand: the cores it asked for over consecutive
// intervals of Step from its start (the agent's 10 ms samples, with the
// work a limit held back moved to where it was asked for).
type Profile struct {
	Step  time.Duration
	Cores []float64
}

// Options say what a boost must achieve and how a start-up's end is found.
// The zero value takes the defaults (Options.withDefaults).
type Options struct {
	// Share is how much longer than unlimited the start-up may take
	// under the boost: 0.10 is within 10% of its unlimited length.
	Share float64
	// IdleCores and QuietFor find the start-up's end: the start of the
	// first stretch of QuietFor or longer with the demand under IdleCores
	// (a server that finished starting and waits), else the last interval
	// above IdleCores.
	IdleCores float64
	QuietFor  time.Duration
	// MinLength is the shortest start-up sized: a shorter one is too short
	// to measure (ErrTooShort).
	MinLength time.Duration
	// MaxCores caps the boost (the node's allocatable CPU); 0: no cap.
	MaxCores float64
	// Slack lengthens the boost's duration past the start-up's boosted
	// length: the boost lasts (1+Slack) times it, so a start-up that runs
	// up to 1+Slack times slower than its profile (a busier node, a JVM
	// that sized its threads from another quota) still ends under the
	// boost instead of finishing its rest at the limit. Never longer than
	// the start-up takes at the limit: by then it has ended without one.
	Slack float64
	// Hidden says the start-up ran throttled most of the time: the
	// profile is what its limit let through, its demand above the limit
	// unseen. Plan then sizes the boost as if the start-up's work ran on
	// BoundCores at once from its start (the most it can use: a lower
	// bound on its unlimited length, so the boost is an upper one), for
	// as long as the start-up took under its limit, and says so.
	Hidden     bool
	BoundCores float64
}

// Defaults of Options.
const (
	DefaultShare     = 0.10
	DefaultIdleCores = 0.05
	DefaultQuietFor  = 500 * time.Millisecond
	DefaultMinLength = 200 * time.Millisecond
	DefaultSlack     = 1.0
)

func (o Options) withDefaults() Options {
	if o.Share <= 0 {
		o.Share = DefaultShare
	}
	if o.IdleCores <= 0 {
		o.IdleCores = DefaultIdleCores
	}
	if o.QuietFor <= 0 {
		o.QuietFor = DefaultQuietFor
	}
	if o.MinLength <= 0 {
		o.MinLength = DefaultMinLength
	}
	if o.Slack <= 0 {
		o.Slack = DefaultSlack
	}
	return o
}

// ErrTooShort marks a start-up too short (or too idle) to size a boost for.
var ErrTooShort = errors.New("start-up too short to measure")

// End is the number of intervals the start-up lasts (Options.IdleCores,
// QuietFor): the demand after it is not the start-up's.
func (p Profile) End(o Options) int {
	o = o.withDefaults()
	quiet := max(int(o.QuietFor/max(p.Step, 1)), 1)
	run, last := 0, 0
	for i, c := range p.Cores {
		if c >= o.IdleCores {
			run, last = 0, i+1
			continue
		}
		run++
		if run >= quiet && last > 0 {
			return last
		}
	}
	return last
}

// Work is the CPU time the first n intervals ask for, in CPU-seconds.
func (p Profile) Work(n int) float64 {
	w := 0.0
	for _, c := range p.Cores[:n] {
		w += c
	}
	return w * p.Step.Seconds()
}

// LengthAt is how long the first n intervals' work takes under a limit
// of limitCores (the fluid model, package doc), in seconds; a limit of 0
// or less is none: the start-up's own length.
func (p Profile) LengthAt(n int, limitCores float64) float64 {
	step := p.Step.Seconds()
	if limitCores <= 0 || math.IsInf(limitCores, 1) {
		return float64(n) * step
	}
	// The backlog at each interval's end: work asked for and not yet
	// served; the last work is served when the final backlog drains.
	backlog := 0.0
	for _, c := range p.Cores[:n] {
		backlog = max(backlog+(c-limitCores)*step, 0)
	}
	return float64(n)*step + backlog/limitCores
}

// LimitFor is the least limit, in cores, under which the first n
// intervals' work ends by target seconds: the largest (W - A(s)) / (target
// - s) over the intervals' bounds s before target (between two bounds the
// ratio is monotone, so the bounds hold its maximum). +Inf when target is
// shorter than the start-up itself.
func (p Profile) LimitFor(n int, target float64) float64 {
	step := p.Step.Seconds()
	if target < float64(n)*step-1e-12 {
		return math.Inf(1)
	}
	w := p.Work(n)
	need, a := 0.0, 0.0
	for i := 0; i <= n; i++ {
		s := float64(i) * step
		if s >= target {
			break
		}
		need = max(need, (w-a)/(target-s))
		if i < n {
			a += p.Cores[i] * step
		}
	}
	return need
}

// Boost is a start-up's need, its length under a limit and the boost that
// brings it within Options.Share of its unlimited length.
type Boost struct {
	// WorkCPUSeconds is the CPU time the start-up used; UnlimitedSeconds
	// its length with no limit.
	WorkCPUSeconds   float64 `json:"work_cpu_seconds"`
	UnlimitedSeconds float64 `json:"unlimited_seconds"`
	// LimitMilli is the limit it was sized against; AtLimitSeconds the
	// start-up's length under it and DelaySeconds what that adds to the
	// unlimited length (0: the limit does not slow it).
	LimitMilli     int64   `json:"limit_millicores"`
	AtLimitSeconds float64 `json:"at_limit_seconds"`
	DelaySeconds   float64 `json:"delay_seconds"`
	// Share is the allowed lengthening; TargetSeconds the length it allows.
	Share         float64 `json:"share"`
	TargetSeconds float64 `json:"target_seconds"`
	// Needed is false when the limit alone keeps the start-up within its
	// share: no boost.
	Needed bool `json:"needed"`
	// BoostMilli is the CPU limit to set while the container starts and
	// DurationSeconds for how long from its start (Duration: the boosted
	// length with Options.Slack, whole seconds rounded up);
	// BoostedSeconds is the start-up's length under the boost.
	BoostMilli      int64   `json:"boost_millicores"`
	DurationSeconds int32   `json:"duration_seconds"`
	BoostedSeconds  float64 `json:"boosted_seconds"`
	// Capped is set when the boost needed is above Options.MaxCores: the
	// boost is the cap, and the start-up ends later than its target.
	Capped bool `json:"capped,omitempty"`
	// Note says in one line what the numbers mean.
	Note string `json:"note"`
}

// Plan sizes the boost of start-up p under a limit of limitMilli
// millicores. It fails with ErrTooShort for a start-up shorter than
// Options.MinLength, and for a limit of 0 or less.
func Plan(p Profile, limitMilli int64, o Options) (Boost, error) {
	o = o.withDefaults()
	if limitMilli <= 0 {
		return Boost{}, fmt.Errorf("limit %dm: a start-up boost is sized against a limit above 0", limitMilli)
	}
	if p.Step <= 0 {
		return Boost{}, fmt.Errorf("start-up step %s: give the sample interval (10ms)", p.Step)
	}
	n := p.End(o)
	if time.Duration(n)*p.Step < o.MinLength {
		return Boost{}, fmt.Errorf("%w: %s busy, under %s", ErrTooShort, time.Duration(n)*p.Step, o.MinLength)
	}
	if o.Hidden {
		if o.BoundCores <= 0 {
			return Boost{}, fmt.Errorf("a start-up throttled throughout: give the most CPUs it can use (BoundCores) to size its boost")
		}
		return planHidden(p, n, limitMilli, o)
	}
	limit := float64(limitMilli) / 1000
	b := Boost{WorkCPUSeconds: p.Work(n), UnlimitedSeconds: p.LengthAt(n, 0), LimitMilli: limitMilli, Share: o.Share}
	b.AtLimitSeconds = p.LengthAt(n, limit)
	b.DelaySeconds = max(b.AtLimitSeconds-b.UnlimitedSeconds, 0)
	b.TargetSeconds = b.UnlimitedSeconds * (1 + o.Share)
	if b.AtLimitSeconds <= b.TargetSeconds {
		b.BoostMilli, b.BoostedSeconds = limitMilli, b.AtLimitSeconds
		b.DurationSeconds = 0
		b.Note = fmt.Sprintf("no boost: under %dm the start-up takes %.2f s, within %.0f%% of its %.2f s unlimited", limitMilli, b.AtLimitSeconds, o.Share*100, b.UnlimitedSeconds)
		return b, nil
	}
	b.Needed = true
	need := p.LimitFor(n, b.TargetSeconds)
	b.BoostMilli = int64(math.Ceil(need*1000 - 1e-6))
	if o.MaxCores > 0 && float64(b.BoostMilli) > o.MaxCores*1000 {
		b.BoostMilli, b.Capped = int64(o.MaxCores*1000), true
	}
	b.BoostedSeconds = p.LengthAt(n, float64(b.BoostMilli)/1000)
	b.DurationSeconds = Duration(b.BoostedSeconds, b.AtLimitSeconds, o.Slack)
	b.Note = fmt.Sprintf("boost to %dm for %d s: the start-up (%.2f CPU-s) takes %.2f s (the duration covers it up to %.0f%% slower), %.2f s under %dm, %.2f s unlimited", b.BoostMilli, b.DurationSeconds, b.WorkCPUSeconds, b.BoostedSeconds, o.Slack*100, b.AtLimitSeconds, limitMilli, b.UnlimitedSeconds)
	if b.Capped {
		b.Note += fmt.Sprintf("; capped at the node's %.3g allocatable CPUs, over the %.0f%% target", o.MaxCores, o.Share*100)
	}
	return b, nil
}

// Duration is a boost's duration in whole seconds for a start-up that
// takes boostedSeconds under the boost and atLimitSeconds under the limit:
// (1+slack) times the boosted length, at most the length at the limit
// (a start-up still running then is past what a boost is for), at least
// the boosted length, rounded up to a second. A boost that ends before
// the start-up does leaves its rest to finish at the limit (LengthBoosted):
// on a loaded host the unlimited profile understates the boosted length
// (docs/agent.md has the JVM rows where a duration without slack let it).
func Duration(boostedSeconds, atLimitSeconds, slack float64) int32 {
	d := max(min(boostedSeconds*(1+slack), atLimitSeconds), boostedSeconds)
	return int32(math.Ceil(d - 1e-9))
}

// LengthBoosted is how long the first n intervals' work takes under a
// limit of boostCores for its first forSeconds and limitCores after (a
// boost that is set back while the start-up still runs), in seconds, by
// the fluid model (LengthAt); limitCores above 0.
func (p Profile) LengthBoosted(n int, boostCores, forSeconds, limitCores float64) float64 {
	step := p.Step.Seconds()
	backlog, t := 0.0, 0.0
	for _, c := range p.Cores[:n] {
		l := limitCores
		if t < forSeconds {
			l = boostCores
		}
		backlog = max(backlog+(c-l)*step, 0)
		t += step
	}
	if backlog <= 0 {
		return t
	}
	if t < forSeconds {
		// The backlog drains at the boost until it ends, then at the limit.
		drain := (forSeconds - t) * boostCores
		if drain >= backlog {
			return t + backlog/boostCores
		}
		return forSeconds + (backlog-drain)/limitCores
	}
	return t + backlog/limitCores
}

// planHidden sizes the boost of a start-up whose demand its limit hid
// (Options.Hidden): its work run on BoundCores from its start is the
// unlimited start-up assumed, the boost planned against it, and the
// duration the start-up's whole length under its limit (it ends by then
// under any boost above the limit, whatever its demand's shape was).
func planHidden(p Profile, n int, limitMilli int64, o Options) (Boost, error) {
	w := p.Work(n)
	steps := max(int(math.Ceil(w/o.BoundCores/p.Step.Seconds()-1e-9)), 1)
	flat := Profile{Step: p.Step, Cores: make([]float64, steps)}
	for i := range flat.Cores {
		flat.Cores[i] = w / p.Step.Seconds() / float64(steps)
	}
	o.Hidden = false
	b, err := Plan(flat, limitMilli, o)
	if err != nil {
		return b, err
	}
	seen := p.LengthAt(n, float64(limitMilli)/1000)
	b.AtLimitSeconds = max(b.AtLimitSeconds, seen)
	b.DelaySeconds = max(b.AtLimitSeconds-b.UnlimitedSeconds, 0)
	if b.Needed {
		b.DurationSeconds = int32(math.Ceil(b.AtLimitSeconds - 1e-9))
	}
	b.Note = fmt.Sprintf("the start-up ran throttled: its demand above its limit is hidden; sized as if its %.2f CPU-s ran on %.3g CPUs from its start (%.2f s)", w, o.BoundCores, b.UnlimitedSeconds)
	if b.Needed {
		b.Note += fmt.Sprintf(": boost to %dm for %d s (its length under %dm, %.2f s), under which it takes %.2f s or more", b.BoostMilli, b.DurationSeconds, limitMilli, b.AtLimitSeconds, b.BoostedSeconds)
	}
	b.Note += "; measure the next start-up under this boost to size it from its own demand"
	return b, nil
}

// Hidden reports whether a start-up's demand was hidden by its limit
// (Options.Hidden): it was throttled in half or more of the periods of
// period its profile spans (throttled: the group's nr_throttled over it).
func Hidden(throttled uint64, p Profile, period time.Duration) bool {
	if throttled == 0 || period <= 0 {
		return false
	}
	periods := float64(time.Duration(p.End(Options{}))*p.Step) / float64(period)
	return periods > 0 && float64(throttled) >= 0.5*periods
}
