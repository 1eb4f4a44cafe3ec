package record

import (
	"maps"
	"slices"

	"github.com/throttlelab/throttlelab/experiment"
)

// ConfigSummary sums up one config under one load across its repeats:
// latency figures and throughput are medians over the repeats (so one odd
// repeat does not move them), counts and throttling are sums. It is the one
// aggregation of runs: summary.json, the table, the report and the presets'
// checks all read it.
type ConfigSummary struct {
	Config        string  `json:"config"`
	Load          string  `json:"load"`
	Repeats       int     `json:"repeats"`
	Requests      int64   `json:"requests"`
	Errors        int64   `json:"errors"`
	P50Ms         float64 `json:"p50_ms"`
	P90Ms         float64 `json:"p90_ms"`
	P99Ms         float64 `json:"p99_ms"`
	P999Ms        float64 `json:"p999_ms"`
	MaxMs         float64 `json:"max_ms"`
	ThroughputRPS float64 `json:"throughput_rps"`
	ThrottledPct  float64 `json:"throttled_periods_pct"`
	ThrottledMs   float64 `json:"throttled_ms"`
	// MeanCores is the CPU use of all the config's instances together,
	// averaged over repeats; the peaks are the busiest instance's.
	MeanCores      float64 `json:"mean_cores"`
	Peak100msCores float64 `json:"peak_100ms_cores"`
	Peak1sCores    float64 `json:"peak_1s_cores"`
	// PeakPeriodCores is the busiest instance's highest use within one of
	// its own CFS periods (UsageStats.PeakPeriod; 0 without a quota).
	PeakPeriodCores float64 `json:"peak_period_cores,omitempty"`
	// SameInstanceRate is the share of consecutive requests that went to the
	// same instance (mean over repeats); Instances the config's count.
	SameInstanceRate float64 `json:"same_instance_rate"`
	Instances        int     `json:"instances"`
	// StallMs is the mean time a request was runnable but not running in the
	// server (wall - CPU - queue, from Server-Timing). Only readers of the
	// request records (the report) fill it in; 0 otherwise.
	StallMs        float64 `json:"stall_ms,omitempty"`
	IsReference    bool    `json:"reference"`
	P99VsReference float64 `json:"p99_vs_reference,omitempty"`
}

// Summary is the experiment's summary.json.
type Summary struct {
	Name    string          `json:"name"`
	Configs []ConfigSummary `json:"configs"`
	Runs    []*Run          `json:"runs"`
	// Verdict is a preset's check, when the experiment is one.
	Verdict *Verdict `json:"verdict,omitempty"`
}

// Median is the middle of v (the mean of the two middle values of an even
// count), 0 for none; v is left as it is.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Aggregate sums up the finished runs of config c under load: the runs must
// all be of that config and load (runs without a load summary are left out).
// IsReference and P99VsReference are Summarize's to set.
func Aggregate(c experiment.Config, load string, runs []*Run) ConfigSummary {
	var done []*Run
	for _, r := range runs {
		if r.Summary != nil {
			done = append(done, r)
		}
	}
	cs := ConfigSummary{Config: c.Name, Load: load, Repeats: len(done), Instances: c.Instances}
	if len(done) == 0 {
		return cs
	}
	n := float64(len(done))
	var periods, throttled, throttledUsec uint64
	for _, r := range done {
		cs.Requests += r.Summary.Requests
		cs.Errors += r.Summary.Requests - r.Summary.OK
		periods += r.Total.Periods
		throttled += r.Total.ThrottledPeriods
		throttledUsec += r.Total.ThrottledUsec
		// In the instances' order, so the sum is the same bits every time.
		for _, name := range slices.Sorted(maps.Keys(r.Usage)) {
			u := r.Usage[name]
			cs.MeanCores += u.Mean / n
			cs.Peak100msCores = max(cs.Peak100msCores, u.Peak100ms)
			cs.Peak1sCores = max(cs.Peak1sCores, u.Peak1s)
			cs.PeakPeriodCores = max(cs.PeakPeriodCores, u.PeakPeriod)
		}
		cs.SameInstanceRate += r.Summary.SameInstanceRate / n
		cs.MaxMs = max(cs.MaxMs, r.Summary.Latency.Max)
	}
	if periods > 0 {
		cs.ThrottledPct = 100 * float64(throttled) / float64(periods)
	}
	cs.ThrottledMs = float64(throttledUsec) / 1000
	median := func(f func(r *Run) float64) float64 {
		v := make([]float64, len(done))
		for i, r := range done {
			v[i] = f(r)
		}
		return Median(v)
	}
	cs.ThroughputRPS = median(func(r *Run) float64 { return r.Summary.ThroughputRPS })
	cs.P50Ms = median(func(r *Run) float64 { return r.Summary.Latency.P50 })
	cs.P90Ms = median(func(r *Run) float64 { return r.Summary.Latency.P90 })
	cs.P99Ms = median(func(r *Run) float64 { return r.Summary.Latency.P99 })
	cs.P999Ms = median(func(r *Run) float64 { return r.Summary.Latency.P999 })
	return cs
}

// Summarize groups the runs by config and load, in the spec's order, and
// sets each p99 against the reference config's under the same load.
func Summarize(e *experiment.Experiment, runs []*Run) *Summary {
	s := &Summary{Name: e.Metadata.Name, Runs: runs}
	for _, l := range e.Spec.Loads {
		var ref *ConfigSummary
		for _, c := range e.Spec.Configs {
			var mine []*Run
			for _, r := range runs {
				if r.Config == c.Name && r.Load == l.Name {
					mine = append(mine, r)
				}
			}
			cs := Aggregate(c, l.Name, mine)
			if cs.Repeats == 0 {
				continue
			}
			cs.IsReference = c.Name == e.Spec.Reference
			s.Configs = append(s.Configs, cs)
			if cs.IsReference {
				ref = &s.Configs[len(s.Configs)-1]
			}
		}
		if ref != nil && ref.P99Ms > 0 {
			for i := range s.Configs {
				if s.Configs[i].Load == l.Name {
					s.Configs[i].P99VsReference = s.Configs[i].P99Ms / ref.P99Ms
				}
			}
		}
	}
	return s
}

// Rows returns the summary's table rows, each config labelled by its name.
func (s *Summary) Rows() []Row {
	out := make([]Row, len(s.Configs))
	for i, c := range s.Configs {
		out[i] = Row{Label: c.Config, ConfigSummary: c}
		if c.IsReference {
			out[i].Label += " (reference)"
		}
	}
	return out
}

// ThrottledSec is ThrottledMs in seconds, as the table shows it.
func (c ConfigSummary) ThrottledSec() float64 { return c.ThrottledMs / 1000 }
