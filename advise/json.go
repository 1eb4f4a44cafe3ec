package advise

import "encoding/json"

// countedJSON is an Evaluation only counted (CountsOnly) as the JSON writes
// it: the fields a replay gives (throttled time, bursts, lost work, delays)
// are left out rather than written as zeros.
type countedJSON struct {
	LimitMilli               int64    `json:"limit_millicores"`
	BurstMilli               int64    `json:"burst_millicores"`
	PeriodUsec               int64    `json:"period_us"`
	QuotaUsec                int64    `json:"quota_us"`
	BurstUsec                int64    `json:"burst_us"`
	ThrottledRatio           float64  `json:"throttled_periods_ratio"`
	ThrottledRatioWorst      float64  `json:"throttled_periods_ratio_worst_phase"`
	ThrottledRatioBest       float64  `json:"throttled_periods_ratio_best_phase"`
	Periods                  float64  `json:"nr_periods"`
	ThrottledPeriods         float64  `json:"nr_throttled"`
	ThrottledRatioRange      *Range   `json:"throttled_periods_ratio_range,omitempty"`
	ThrottledRatioSliceBound *float64 `json:"throttled_periods_ratio_slice_bound,omitempty"`
	CountsOnly               bool     `json:"counts_only"`
	Saturated                bool     `json:"saturated,omitempty"`
	Phases                   int      `json:"phases,omitempty"`
}

// evalJSON is e as the JSON writes it: without the fields a replay gives
// when e is only counted.
func evalJSON(e Evaluation) any {
	if !e.CountsOnly {
		return e
	}
	return countedJSON{LimitMilli: e.LimitMilli, BurstMilli: e.BurstMilli, PeriodUsec: e.PeriodUsec, QuotaUsec: e.QuotaUsec, BurstUsec: e.BurstUsec,
		ThrottledRatio: e.ThrottledRatio, ThrottledRatioWorst: e.ThrottledRatioWorst, ThrottledRatioBest: e.ThrottledRatioBest,
		Periods: e.Periods, ThrottledPeriods: e.ThrottledPeriods, ThrottledRatioRange: e.ThrottledRatioRange,
		ThrottledRatioSliceBound: e.ThrottledRatioSliceBound, CountsOnly: true, Saturated: e.Saturated, Phases: e.Phases}
}

// baselineJSON is a Baseline as the JSON writes it (its evaluation through
// evalJSON).
type baselineJSON struct {
	Name       string `json:"name"`
	How        string `json:"how"`
	Windows    int    `json:"windows,omitempty"`
	Missing    string `json:"missing,omitempty"`
	Evaluation any    `json:"evaluation,omitempty"`
}

// MarshalJSON writes the advice with each evaluation only counted
// (CountsOnly) without the fields it does not have, in the grid and in
// the baselines.
func (a Advice) MarshalJSON() ([]byte, error) {
	type plain Advice // without this method
	evs := make([]any, len(a.Evaluations))
	for i, e := range a.Evaluations {
		evs[i] = evalJSON(e)
	}
	bls := make([]baselineJSON, len(a.Baselines))
	for i, b := range a.Baselines {
		bls[i] = baselineJSON{Name: b.Name, How: b.How, Windows: b.Windows, Missing: b.Missing}
		if b.Evaluation != nil {
			bls[i].Evaluation = evalJSON(*b.Evaluation)
		}
	}
	return json.Marshal(struct {
		Evaluations []any `json:"evaluations"`
		plain
		Baselines []baselineJSON `json:"baselines"`
	}{evs, plain(a), bls})
}
