package verdict

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/throttlelab/throttlelab/settle"
	"github.com/throttlelab/throttlelab/stats"
)

// Reproduction is a verdict's or a condition's result: the 95% interval clears
// the check (Reproduced), clears its opposite (NotReproduced), or straddles
// the threshold (Inconclusive).
type Reproduction string

// The three outcomes.
const (
	Reproduced    Reproduction = "reproduced"
	NotReproduced Reproduction = "not reproduced"
	Inconclusive  Reproduction = "inconclusive"
)

// Condition is one part of a preset's check: a figure, its 95% interval,
// and the threshold it must clear. Op is ">=" (at least Threshold), "<="
// (at most Threshold) or "between" (Threshold to High). A figure without an
// interval (a count, or a shape that has no sampling noise to speak of) is
// judged by its point.
type Condition struct {
	Name      string          `json:"name"`
	Value     float64         `json:"value"`
	CI95      *stats.Interval `json:"ci95,omitempty"`
	Op        string          `json:"op"`
	Threshold float64         `json:"threshold"`
	High      float64         `json:"high,omitempty"`
	// Margin says why the threshold is clear of noise: what a result must
	// beat, beyond "differs".
	Margin  string       `json:"margin"`
	Outcome Reproduction `json:"outcome"`
	// RepeatsNeeded, for an inconclusive condition, estimates how many
	// repeats would likely settle it (0: no estimate).
	RepeatsNeeded int `json:"repeats_needed,omitempty"`
	// CISettle, in a verdict of repeats until settled, is the interval at
	// the stopping rule's level (Settling.Level), which the outcome was
	// judged by.
	CISettle *stats.Interval `json:"ci_settle,omitempty"`
	// Draws are the bootstrap draws the intervals came from (not written):
	// JudgeAt draws the interval of another level from them.
	Draws []float64 `json:"-"`
	// PerRepeat are the condition's figure from each repeat alone (not
	// written): JudgeAt judges on their t interval (settle.RepeatInterval)
	// when there are any, on Draws otherwise.
	PerRepeat []float64 `json:"-"`
	// Indifference, for a ">=" or "<=" condition, is the preset's margin
	// around the threshold within which the side does not matter to the
	// finding: an interval inside [Threshold - Indifference, Threshold +
	// Indifference] that straddles the threshold holds within the margin
	// (reproduced; Indifferent says so), as no budget would settle its
	// side, and as the rule's last look judges it (withinMargin).
	Indifference float64 `json:"indifference,omitempty"`
	// Indifferent marks a condition judged reproduced within the margin
	// because its interval lies within Indifference of the threshold.
	Indifferent bool `json:"indifferent,omitempty"`
	// LogScale marks a ratio of two positive figures: the stopping rule
	// judges it on the t interval of the logs of its per-repeat values,
	// back-transformed (JudgeAt), and its prior is a spread of logs.
	LogScale bool `json:"log_scale,omitempty"`
	// Prior is the run-to-run spread of PerRepeat from earlier runs on
	// this machine (not written): JudgeAt pools it with this run's
	// (settle.PooledInterval). Nil: none for this machine.
	Prior *settle.Prior `json:"-"`
	// Pooled says how CISettle used the prior ("pooled with 7 earlier
	// repeats from 2026-11-29", or why it did not).
	Pooled string `json:"pooled,omitempty"`
	// WithinMargin, at the rule's last look: "holds within the margin" or "does not
	// hold by more than the margin" when a straddling interval was judged
	// at the rule's last look with Indifference (JudgeAt).
	WithinMargin string `json:"within_margin,omitempty"`
}

// Verdict is a preset's check, computed from what a run measured. It is
// verdict.json in the results directory, and the report's header shows it.
type Verdict struct {
	Preset  string `json:"preset"`
	Finding string `json:"finding"`
	Source  string `json:"source"`
	Claim   string `json:"claim"`
	Check   string `json:"check"`
	// SelfCheck marks a check of throttlelab's own machinery (its
	// balancers) rather than of something the kernel decides.
	SelfCheck bool `json:"self_check,omitempty"`
	// Outcome is the check's result; Reproduced is Outcome == Reproduced,
	// kept for readers of older verdicts.
	Outcome    Reproduction `json:"outcome"`
	Reproduced bool         `json:"reproduced"`
	// Conditions are the check's parts with their intervals; Numbers gives
	// the measured figures behind them in words.
	Conditions []Condition `json:"conditions,omitempty"`
	Numbers    string      `json:"numbers"`
	// Repeats is how many repeats the figures come from; RepeatsNeeded
	// estimates how many would likely settle an inconclusive verdict.
	Repeats       int `json:"repeats,omitempty"`
	RepeatsNeeded int `json:"repeats_needed,omitempty"`
	// CIMethod says how the intervals were computed.
	CIMethod string `json:"ci_method,omitempty"`
	// Why explains a check that did not pass, where the results can tell.
	Why string `json:"why,omitempty"`
	// Reading is the explanation computed from the results whatever the
	// outcome (not written): JudgeAt makes it Why when the outcome at the
	// rule's level is not reproduced, and drops Why when it is.
	Reading string `json:"-"`
	// Disturbed names the runs during which other work on the host used
	// more than record.DisturbedShare of its CPUs; such a verdict is inconclusive
	// whatever its intervals say, since they measured that work too.
	Disturbed string `json:"disturbed,omitempty"`
	// Scaled says how a --quick run was scaled down ("" at original scale).
	Scaled string `json:"scaled,omitempty"`
	// Settle, for repeats until settled (run or sim --until-settled), says
	// how many repeats it took, why they stopped and the rule's
	// false-verdict rate; the outcome is then judged at Settle.Level.
	Settle  *Settling `json:"settle,omitempty"`
	Backend string    `json:"backend"`
}

// MaxRepeatsEstimate caps RepeatsNeeded ("this many or more"): beyond it
// the estimate says little.
const MaxRepeatsEstimate = 100

// ErrBadCondition marks a condition that cannot be judged: an operator
// other than ">=", "<=" and "between", or a figure, interval or threshold
// that is NaN or infinite. It is an error in the check that made it, not an
// inconclusive result.
var ErrBadCondition = errors.New("bad condition")

// check returns an error wrapping ErrBadCondition when c cannot be judged.
func (c *Condition) check() error {
	switch c.Op {
	case ">=", "<=", "between":
	default:
		return fmt.Errorf("%w %q: operator %q (want >=, <= or between)", ErrBadCondition, c.Name, c.Op)
	}
	nums := []float64{c.Value, c.Threshold}
	if c.Op == "between" {
		nums = append(nums, c.High)
	}
	if c.CI95 != nil {
		nums = append(nums, c.CI95[0], c.CI95[1])
	}
	for _, v := range nums {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w %q: %s (a figure the results could not give: check what it was computed from)", ErrBadCondition, c.Name, c)
		}
	}
	if c.Op == "between" && c.High < c.Threshold {
		return fmt.Errorf("%w %q: between %v and %v, an empty range", ErrBadCondition, c.Name, c.Threshold, c.High)
	}
	return nil
}

// Judge sets the condition's Outcome (and RepeatsNeeded when inconclusive)
// from its interval, or its point when it has none. repeats is how many
// repeats the interval comes from. An interval's half-width shrinks about
// as 1/sqrt(repeats), so the repeats that would likely settle it are
// repeats x (half-width / distance of the point from the threshold)^2.
// A condition that cannot be judged (ErrBadCondition) is an error and keeps
// no outcome.
func (c *Condition) Judge(repeats int) error {
	if err := c.check(); err != nil {
		c.Outcome, c.RepeatsNeeded = "", 0
		return err
	}
	lo, hi := c.Value, c.Value
	if c.CI95 != nil {
		lo, hi = c.CI95[0], c.CI95[1]
	}
	pass, fail := false, false
	switch c.Op {
	case ">=":
		pass, fail = lo >= c.Threshold, hi < c.Threshold
	case "<=":
		pass, fail = hi <= c.Threshold, lo > c.Threshold
	case "between":
		pass, fail = lo >= c.Threshold && hi <= c.High, hi < c.Threshold || lo > c.High
	}
	c.Indifferent = false
	switch {
	case pass:
		c.Outcome = Reproduced
	case fail:
		c.Outcome = NotReproduced
	case c.Indifference > 0 && c.Op != "between" && lo >= c.Threshold-c.Indifference && hi <= c.Threshold+c.Indifference:
		// The same side as the rule's last look gives such an interval
		// (withinMargin): it holds within the margin.
		c.Outcome, c.Indifferent, c.RepeatsNeeded = Reproduced, true, 0
	default:
		c.Outcome = Inconclusive
		c.RepeatsNeeded = MaxRepeatsEstimate
		if dist, half := c.distHalf(lo, hi); dist > 0 {
			n := float64(max(repeats, 1)) * (half / dist) * (half / dist)
			c.RepeatsNeeded = min(int(math.Ceil(n)), MaxRepeatsEstimate)
		}
		c.RepeatsNeeded = max(c.RepeatsNeeded, repeats+1)
	}
	return nil
}

// distHalf is the distance of the point from the threshold it is nearest
// (High for a range when nearer, or when the point is past it) and the
// interval [lo, hi]'s half-width on that side: what the repeats needed
// are estimated from. A LogScale condition with a positive interval has
// both on the log scale, where its interval is symmetric and shrinks as
// 1/sqrt(repeats).
func (c *Condition) distHalf(lo, hi float64) (dist, half float64) {
	if c.LogScale && lo > 0 && c.Value > 0 && c.Threshold > 0 {
		return logDistHalf(c.Value, lo, hi, c.Threshold, c.High, c.Op)
	}
	switch c.Op {
	case ">=":
		dist = math.Abs(c.Value - c.Threshold)
		half = c.Value - lo
		if c.Value < c.Threshold {
			half = hi - c.Value
		}
	case "<=":
		dist = math.Abs(c.Value - c.Threshold)
		half = hi - c.Value
		if c.Value > c.Threshold {
			half = c.Value - lo
		}
	case "between":
		// Below the range its low end, above it its high end, inside it
		// the nearer end (before 2026-11-29 a point below the range was
		// measured from the high end).
		dl, dh := math.Abs(c.Value-c.Threshold), math.Abs(c.Value-c.High)
		switch {
		case c.Value < c.Threshold:
			dist, half = dl, hi-c.Value
		case c.Value > c.High || dh < dl:
			dist, half = dh, hi-c.Value
			if c.Value > c.High {
				half = c.Value - lo
			}
		default:
			dist, half = dl, c.Value-lo
		}
	}
	return dist, half
}

// logDistHalf is distHalf's distance of the point from the threshold it is
// nearest (High for a range when nearer) and the interval's half-width on
// that side, both on the log scale.
func logDistHalf(v, lo, hi, thr, high float64, op string) (dist, half float64) {
	t := thr
	if op == "between" && high > 0 && math.Abs(math.Log(v/high)) < math.Abs(math.Log(v/thr)) {
		t = high
	}
	dist = math.Abs(math.Log(v / t))
	half = math.Log(v / lo)
	if t > v {
		half = math.Log(hi / v)
	}
	return dist, half
}

// Combine judges every condition and sums them up: not reproduced if any
// condition's interval clears its opposite, reproduced if every one clears
// its check, inconclusive otherwise (with the largest repeats estimate).
// A condition that cannot be judged makes it an error (ErrBadCondition).
func Combine(conds []Condition, repeats int) (Reproduction, int, error) {
	out, need := Reproduced, 0
	for i := range conds {
		c := &conds[i]
		if err := c.Judge(repeats); err != nil {
			return "", 0, err
		}
		switch c.Outcome {
		case NotReproduced:
			out = NotReproduced
		case Inconclusive:
			if out != NotReproduced {
				out = Inconclusive
			}
			need = max(need, c.RepeatsNeeded)
		}
	}
	if out != Inconclusive {
		need = 0
	}
	return out, need, nil
}

// Word is the verdict's outcome as run and sim print it.
func (v *Verdict) Word() string {
	switch v.outcome() {
	case Reproduced:
		return "REPRODUCED"
	case Inconclusive:
		return "INCONCLUSIVE"
	}
	return "NOT REPRODUCED"
}

// outcome is Outcome, or what Reproduced says for verdicts from before
// there were three.
func (v *Verdict) outcome() Reproduction {
	if v.Outcome != "" {
		return v.Outcome
	}
	if v.Reproduced {
		return Reproduced
	}
	return NotReproduced
}

// Short is the verdict in one short line, the first line run and sim print
// for a preset: the finding, the outcome, the preset, and how many of the
// check's conditions came out which way ("F9 REPRODUCED (f09-burn-flow): 4
// of 4 conditions hold").
func (v *Verdict) Short() string {
	kind := ""
	if v.SelfCheck {
		kind = " (self-check)"
	}
	line := fmt.Sprintf("%s %s%s (%s)", v.Finding, v.Word(), kind, v.Preset)
	n := len(v.Conditions)
	if n == 0 {
		return line
	}
	count := map[Reproduction]int{}
	for _, c := range v.Conditions {
		count[c.Outcome]++
	}
	var parts []string
	if k := count[Reproduced]; k > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d conditions hold", k, n))
	}
	if k := count[Inconclusive]; k > 0 {
		parts = append(parts, fmt.Sprintf("%d inconclusive", k))
	}
	if k := count[NotReproduced]; k > 0 {
		parts = append(parts, fmt.Sprintf("%d fail", k))
	}
	// A settling stopped by the disturbance says so itself.
	if v.Disturbed != "" && (v.Settle == nil || v.Settle.Reason != string(settle.Disturbed)) {
		parts = append(parts, "disturbed by other work")
	}
	if v.Settle != nil {
		parts = append(parts, v.Settle.Words)
	}
	return line + ": " + strings.Join(parts, ", ")
}

// Details are the verdict's check, figures, intervals and explanation, one
// item a line, printed after the table: what Short sums up.
func (v *Verdict) Details() []string {
	out := []string{
		fmt.Sprintf("%s check: %s", v.Finding, v.Check),
		fmt.Sprintf("%s figures: %s", v.Finding, v.Numbers),
	}
	for _, c := range v.Conditions {
		out = append(out, fmt.Sprintf("%s 95%% interval: %s", v.Finding, c))
	}
	if w := v.settledWords(); w != "" {
		out = append(out, fmt.Sprintf("%s repeats: %s", v.Finding, w))
	}
	if v.outcome() == Inconclusive && v.RepeatsNeeded > 0 {
		out = append(out, fmt.Sprintf("%s: the intervals straddle the check: %s would likely settle it (this run had %d)", v.Finding, v.RepeatsWords(), max(v.Repeats, 1)))
	}
	if v.Disturbed != "" {
		out = append(out, fmt.Sprintf("%s disturbed: %s", v.Finding, v.Disturbed))
	}
	if v.Why != "" {
		out = append(out, fmt.Sprintf("%s why: %s", v.Finding, v.Why))
	}
	return out
}

// Line is the verdict in one line, for tables (the reproduction table's
// cells carry the same parts).
func (v *Verdict) Line() string {
	kind := ""
	if v.SelfCheck {
		kind = " (self-check of throttlelab's balancer)"
	}
	line := fmt.Sprintf("%s %s%s (%s): %s. %s", v.Finding, v.Word(), kind, v.Preset, v.Check, v.Numbers)
	if s := v.Intervals(); s != "" {
		line += ". 95% intervals: " + s
	}
	if w := v.settledWords(); w != "" {
		line += ". Repeats: " + w
	}
	if v.outcome() == Inconclusive && v.RepeatsNeeded > 0 {
		line += fmt.Sprintf(". The intervals straddle the check: %s would likely settle it (this run had %d)", v.RepeatsWords(), max(v.Repeats, 1))
	}
	if v.Disturbed != "" {
		line += ". Disturbed: " + v.Disturbed
	}
	if v.Why != "" {
		line += ". Why: " + v.Why
	}
	return line
}

// Intervals lists the conditions with intervals in words ("p99 limited /
// unlimited 5.78 [4.10, 7.30] >= 2: reproduced; ...").
func (v *Verdict) Intervals() string {
	var parts []string
	for _, c := range v.Conditions {
		parts = append(parts, c.String())
	}
	return strings.Join(parts, "; ")
}

// String is the condition in words.
func (c Condition) String() string {
	s := fmt.Sprintf("%s %s", c.Name, num(c.Value))
	if c.CI95 != nil {
		s += fmt.Sprintf(" [%s, %s]", num(c.CI95[0]), num(c.CI95[1]))
	}
	if c.CISettle != nil {
		pooled := ""
		if c.Pooled != "" {
			pooled = ", " + c.Pooled
		}
		scale := ""
		if c.LogScale {
			scale = ", on the log scale"
		}
		s += fmt.Sprintf(" (judged on [%s, %s] at the stopping rule's level%s%s)", num(c.CISettle[0]), num(c.CISettle[1]), scale, pooled)
	}
	if c.Op == "between" {
		s += fmt.Sprintf(" in %s-%s", num(c.Threshold), num(c.High))
	} else {
		s += fmt.Sprintf(" %s %s", c.Op, num(c.Threshold))
	}
	if c.Outcome != "" {
		s += ": " + string(c.Outcome)
	}
	if c.Indifferent {
		s += fmt.Sprintf(" (holds within the margin: the interval lies within %s of the threshold, where the finding does not say which side, and no number of repeats would settle it)", num(c.Indifference))
	}
	if c.WithinMargin != "" {
		s += fmt.Sprintf(" (at the rule's last look: %s of %s)", c.WithinMargin, num(c.Indifference))
	}
	return s
}

func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a < 10:
		return fmt.Sprintf("%.3g", v)
	case a < 1000:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// RepeatsWords is RepeatsNeeded in words ("about 6 repeats", "100 repeats
// or more").
func (v *Verdict) RepeatsWords() string {
	if v.RepeatsNeeded >= MaxRepeatsEstimate {
		return fmt.Sprintf("%d repeats or more", MaxRepeatsEstimate)
	}
	return fmt.Sprintf("about %d repeats", v.RepeatsNeeded)
}
