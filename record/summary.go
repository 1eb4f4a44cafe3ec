package record

import (
	"fmt"
	"maps"
	"slices"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/stats"
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
	// MeanMs is the mean latency (median over repeats of each run's mean).
	MeanMs float64 `json:"mean_ms"`
	// The 95% intervals of the figures above (ExperimentSummary.AddIntervals; absent
	// where the request records were not read).
	MeanMsCI95         *stats.Interval `json:"mean_ms_ci95,omitempty"`
	P50MsCI95          *stats.Interval `json:"p50_ms_ci95,omitempty"`
	P90MsCI95          *stats.Interval `json:"p90_ms_ci95,omitempty"`
	P99MsCI95          *stats.Interval `json:"p99_ms_ci95,omitempty"`
	P999MsCI95         *stats.Interval `json:"p999_ms_ci95,omitempty"`
	P99VsReferenceCI95 *stats.Interval `json:"p99_vs_reference_ci95,omitempty"`
}

// ExperimentSummary is the experiment's summary.json.
type ExperimentSummary struct {
	Name    string          `json:"name"`
	Configs []ConfigSummary `json:"configs"`
	Runs    []*Run          `json:"runs"`
	// CIMethod says how the intervals were computed (empty without them).
	CIMethod string `json:"ci_method,omitempty"`
	// Verdict is a preset's check (a *verdict.Verdict), when the experiment
	// is one. Read back from summary.json it is the JSON's generic form;
	// ReadVerdict reads verdict.json, the same verdict, typed.
	Verdict any `json:"verdict,omitempty"`
	// Samples are the runs' successful latencies (ms) by run ID, as
	// AddIntervals was given them; checks resample them too.
	Samples map[string]*stats.Sample `json:"-"`
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
		return stats.Median(v)
	}
	cs.ThroughputRPS = median(func(r *Run) float64 { return r.Summary.ThroughputRPS })
	cs.P50Ms = median(func(r *Run) float64 { return r.Summary.Latency.P50 })
	cs.P90Ms = median(func(r *Run) float64 { return r.Summary.Latency.P90 })
	cs.P99Ms = median(func(r *Run) float64 { return r.Summary.Latency.P99 })
	cs.P999Ms = median(func(r *Run) float64 { return r.Summary.Latency.P999 })
	cs.MeanMs = median(func(r *Run) float64 { return r.Summary.Latency.Mean })
	return cs
}

// Summarize groups the runs by config and load, in the spec's order, and
// sets each p99 against the reference config's under the same load.
func Summarize(e *experiment.Experiment, runs []*Run) *ExperimentSummary {
	s := &ExperimentSummary{Name: e.Metadata.Name, Runs: runs}
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

// Row is one line of the results table: a config under a load, and how the
// table names it ("limited", "measured: limited (reference)").
type Row struct {
	Label string
	ConfigSummary
}

// Rows returns the summary's table rows, each config labelled by its name.
func (s *ExperimentSummary) Rows() []Row {
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

// Groups returns, for configs under load, each config's samples by repeat
// slot (the load's repeat numbers in order; nil where a config lacks one):
// what Resample takes. sample picks a run's sample (nil to leave it out).
func (s *ExperimentSummary) Groups(load string, configs []string, sample func(*Run) *stats.Sample) [][]*stats.Sample {
	var reps []int
	for _, r := range s.Runs {
		if r.Load == load && !slices.Contains(reps, r.Repeat) {
			reps = append(reps, r.Repeat)
		}
	}
	slices.Sort(reps)
	out := make([][]*stats.Sample, len(configs))
	for g, c := range configs {
		out[g] = make([]*stats.Sample, len(reps))
		for _, r := range s.Runs {
			if r.Load == load && r.Config == c && r.Summary != nil {
				out[g][slices.Index(reps, r.Repeat)] = sample(r)
			}
		}
	}
	return out
}

// Draws resamples a latency statistic of configs under load (see
// Resample): out[g][b] for configs[g]. Every caller gets the same draws for
// the same statistic, so the summary's intervals and a check's agree.
func (s *ExperimentSummary) Draws(load string, configs []string, st stats.Stat) [][]float64 {
	groups := s.Groups(load, configs, func(r *Run) *stats.Sample { return s.Samples[r.ID] })
	return stats.Resample(groups, st, stats.Resamples, stats.BootstrapSeed)
}

// AddIntervals sets the 95% interval of every config's mean, percentiles
// and p99 against the reference from samples, each run's successful
// latencies in ms by run ID (ReadSamples), by the hierarchical bootstrap of
// Resample, and says how in CIMethod.
func (s *ExperimentSummary) AddIntervals(samples map[string]*stats.Sample) {
	s.Samples = samples
	var loads []string
	reps := 0
	for _, c := range s.Configs {
		if !slices.Contains(loads, c.Load) {
			loads = append(loads, c.Load)
		}
		reps = max(reps, c.Repeats)
	}
	for _, load := range loads {
		var names []string
		var idx []int
		ref := -1
		for i, c := range s.Configs {
			if c.Load == load {
				if c.IsReference {
					ref = len(names)
				}
				names = append(names, c.Config)
				idx = append(idx, i)
			}
		}
		set := func(st stats.Stat, point func(*ConfigSummary) float64, field func(*ConfigSummary) **stats.Interval) [][]float64 {
			d := s.Draws(load, names, st)
			for g, i := range idx {
				c := &s.Configs[i]
				if iv, ok := stats.PercentileInterval(d[g], point(c)); ok {
					*field(c) = &iv
				}
			}
			return d
		}
		set(stats.Mean, func(c *ConfigSummary) float64 { return c.MeanMs }, func(c *ConfigSummary) **stats.Interval { return &c.MeanMsCI95 })
		set(stats.Quantile(50), func(c *ConfigSummary) float64 { return c.P50Ms }, func(c *ConfigSummary) **stats.Interval { return &c.P50MsCI95 })
		set(stats.Quantile(90), func(c *ConfigSummary) float64 { return c.P90Ms }, func(c *ConfigSummary) **stats.Interval { return &c.P90MsCI95 })
		set(stats.Quantile(99.9), func(c *ConfigSummary) float64 { return c.P999Ms }, func(c *ConfigSummary) **stats.Interval { return &c.P999MsCI95 })
		d := set(stats.Quantile(99), func(c *ConfigSummary) float64 { return c.P99Ms }, func(c *ConfigSummary) **stats.Interval { return &c.P99MsCI95 })
		if ref < 0 {
			continue
		}
		for g, i := range idx {
			c := &s.Configs[i]
			if c.P99VsReference == 0 {
				continue
			}
			if iv, ok := stats.PercentileInterval(stats.Ratio(d[g], d[ref]), c.P99VsReference); ok {
				c.P99VsReferenceCI95 = &iv
			}
		}
	}
	s.CIMethod = CIMethod(reps)
}

// CIMethod describes the intervals of results with the given number of
// repeats, as summary.json and the report state it.
func CIMethod(repeats int) string {
	m := fmt.Sprintf("95%% percentile intervals from %d bootstrap resamples (seed %d)", stats.Resamples, uint64(stats.BootstrapSeed))
	if repeats <= 1 {
		return m + " of each run's requests: one repeat, so they leave out run-to-run variation"
	}
	return m + fmt.Sprintf(", hierarchical: the %d repeats drawn with replacement (the same for every config), then each drawn run's requests; a figure is the median over the drawn repeats", repeats)
}
