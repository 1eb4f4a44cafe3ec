package advise

import (
	"fmt"
	"math"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
)

// Audit is the advice checked against the kernel: the sampled demand
// replayed at the limit the group had while it was sampled, beside what the
// kernel itself counted over the same periods (cpu.stat's nr_throttled and
// nr_periods). Its error widens every interval of the advice: a model that
// missed the group's own throttling by 0.1 cannot promise better at another
// limit.
type Audit struct {
	LimitMilli int64 `json:"limit_millicores"`
	PeriodUsec int64 `json:"period_us"`
	// Predicted is the replay's throttled share of periods at the limit.
	Predicted float64 `json:"predicted_throttled_periods_ratio"`
	// Measured is the kernel's: ThrottledPeriods / Periods.
	Measured         float64 `json:"kernel_throttled_periods_ratio"`
	Periods          uint64  `json:"kernel_nr_periods"`
	ThrottledPeriods uint64  `json:"kernel_nr_throttled"`
	// Error is Predicted - Measured (negative: the model predicted less
	// throttling than the kernel counted).
	Error float64 `json:"error"`
}

// minAuditPeriods is the fewest periods the kernel must have counted for
// an audit: fewer say little about a share.
const minAuditPeriods = 10

// AuditAt replays d at limit p and compares with kernel, the group's
// cpu.stat change over the same samples. It returns nil without an error
// when the kernel counted too few periods to compare with.
func AuditAt(d *Demand, p Point, kernel cfs.Stat, o Options) (*Audit, error) {
	if kernel.Periods < minAuditPeriods {
		return nil, nil
	}
	evs, err := Evaluate(d, []Point{p}, o)
	if err != nil {
		return nil, fmt.Errorf("auditing at %s: %w", p, err)
	}
	a := &Audit{LimitMilli: p.LimitMilli, PeriodUsec: int64(p.Period / time.Microsecond), Predicted: evs[0].ThrottledRatio,
		Periods: kernel.Periods, ThrottledPeriods: kernel.ThrottledPeriods}
	a.Measured = float64(kernel.ThrottledPeriods) / float64(kernel.Periods)
	a.Error = a.Predicted - a.Measured
	return a, nil
}

// Widen widens every throttled-share interval of evs by the audit's error
// (both ways, within 0..1), as Advise does.
func (a *Audit) Widen(evs []Evaluation) { widenBy(evs, a.Error) }

// widenBy widens every throttled-share interval of evs by e (both ways,
// within 0..1).
func widenBy(evs []Evaluation, e float64) {
	e = math.Abs(e)
	for i := range evs {
		if r := evs[i].ThrottledRatioRange; r != nil {
			*r = Range{max(0, r[0]-e), min(1, r[1]+e)}
		}
	}
}

// String says what the audit found, in a line.
func (a *Audit) String() string {
	return fmt.Sprintf("self-audit: at the group's own limit %s the replay of these samples predicts %.1f%% of periods throttled; the kernel counted %.1f%% (%d of %d): error %+.3f, every interval widened by it",
		formatMilli(a.LimitMilli), 100*a.Predicted, 100*a.Measured, a.ThrottledPeriods, a.Periods, a.Error)
}
