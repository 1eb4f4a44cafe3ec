package experiment

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
)

// ConfigSummary sums up one config under one load across its repeats: latency
// percentiles are the median over repeats, throttling is summed.
type ConfigSummary struct {
	Config         string  `json:"config"`
	Load           string  `json:"load"`
	Repeats        int     `json:"repeats"`
	Requests       int64   `json:"requests"`
	Errors         int64   `json:"errors"`
	P50Ms          float64 `json:"p50_ms"`
	P99Ms          float64 `json:"p99_ms"`
	MaxMs          float64 `json:"max_ms"`
	ThroughputRPS  float64 `json:"throughput_rps"`
	ThrottledPct   float64 `json:"throttled_periods_pct"`
	ThrottledMs    float64 `json:"throttled_ms"`
	MeanCores      float64 `json:"mean_cores"`
	Peak100msCores float64 `json:"peak_100ms_cores"`
	IsReference    bool    `json:"reference"`
	P99VsReference float64 `json:"p99_vs_reference,omitempty"`
}

// Summary is the experiment's summary.json.
type Summary struct {
	Name    string          `json:"name"`
	Configs []ConfigSummary `json:"configs"`
	Runs    []*RunSummary   `json:"runs"`
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

// Summarize groups the runs by config and load, in the spec's order.
func Summarize(e *Experiment, runs []*RunSummary) *Summary {
	s := &Summary{Name: e.Metadata.Name, Runs: runs}
	for _, l := range e.Spec.Loads {
		var ref *ConfigSummary
		for _, c := range e.Spec.Configs {
			cs := ConfigSummary{Config: c.Name, Load: l.Name, IsReference: c.Name == e.Spec.Reference}
			var p50, p99, rps []float64
			var periods, throttled uint64
			for _, r := range runs {
				if r.Config != c.Name || r.Load != l.Name || r.Summary == nil {
					continue
				}
				cs.Repeats++
				cs.Requests += r.Summary.Requests
				cs.Errors += r.Summary.Requests - r.Summary.OK
				p50 = append(p50, r.Summary.Latency.P50)
				p99 = append(p99, r.Summary.Latency.P99)
				rps = append(rps, r.Summary.ThroughputRPS)
				cs.MaxMs = max(cs.MaxMs, r.Summary.Latency.Max)
				periods += r.Total.Periods
				throttled += r.Total.ThrottledPeriods
				cs.ThrottledMs += float64(r.Total.ThrottledUsec) / 1000
				// Cores of all the config's instances together, averaged over
				// repeats; the peak is the busiest instance's.
				for _, u := range r.Usage {
					cs.MeanCores += u.Mean
					cs.Peak100msCores = max(cs.Peak100msCores, u.Peak100ms)
				}
			}
			if cs.Repeats == 0 {
				continue
			}
			cs.MeanCores /= float64(cs.Repeats)
			cs.P50Ms, cs.P99Ms, cs.ThroughputRPS = Median(p50), Median(p99), Median(rps)
			if periods > 0 {
				cs.ThrottledPct = 100 * float64(throttled) / float64(periods)
			}
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

// WriteTable prints the summary as an aligned table.
func (s *Summary) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "config\tload\truns\trequests\terrors\tp50 ms\tp99 ms\tp99/ref\tmax ms\treq/s\tthrottled %\tthrottled ms\tmean cores\tpeak 100ms\t")
	for _, c := range s.Configs {
		name := c.Config
		if c.IsReference {
			name += " (ref)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t\n", name, c.Load, c.Repeats, c.Requests, c.Errors,
			c.P50Ms, c.P99Ms, c.P99VsReference, c.MaxMs, c.ThroughputRPS, c.ThrottledPct, c.ThrottledMs, c.MeanCores, c.Peak100msCores)
	}
	tw.Flush()
}

// ReadResults reads a results directory: the resolved spec, the environment
// and the summaries of the runs that finished, in the order they were run.
func ReadResults(dir string) (*Experiment, Env, []*RunSummary, error) {
	// Runs are read by their IDs, in the order they were made; one not
	// renamed into place yet (unfinished) is not there.
	var env Env
	e, err := ReadSpec(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, env, nil, fmt.Errorf("%s: not a results directory (no spec.yaml): give a directory written by throttlelab run or sim", dir)
	}
	if err != nil {
		return nil, env, nil, fmt.Errorf("%s: %w", dir, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "env.json")); err == nil {
		if err := json.Unmarshal(b, &env); err != nil {
			return nil, env, nil, fmt.Errorf("%s: %w", filepath.Join(dir, "env.json"), err)
		}
	}
	var runs []*RunSummary
	for _, r := range e.Runs() {
		rs, err := readRunSummary(filepath.Join(dir, "runs", r.ID()))
		if err != nil {
			continue // not run yet
		}
		runs = append(runs, rs)
	}
	if len(runs) == 0 {
		return nil, env, nil, fmt.Errorf("%s: no finished runs yet: finish the experiment with --resume", dir)
	}
	return e, env, runs, nil
}

// Verdict is a preset's check, computed from what a run measured. It is
// verdict.json in the results directory, and the report's header shows it.
type Verdict struct {
	Preset  string `json:"preset"`
	Finding string `json:"finding"`
	Source  string `json:"source"`
	Claim   string `json:"claim"`
	Check   string `json:"check"`
	// Reproduced says whether the check passed; Numbers gives the measured
	// figures behind it.
	Reproduced bool   `json:"reproduced"`
	Numbers    string `json:"numbers"`
	// Why explains a failed check where the results can tell.
	Why string `json:"why,omitempty"`
	// Scaled says how a --quick run was scaled down ("" at original scale).
	Scaled  string `json:"scaled,omitempty"`
	Backend string `json:"backend"`
}
