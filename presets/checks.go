package presets

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/stats"
	"github.com/throttlelab/throttlelab/verdict"
)

// A check is a list of conditions (Condition), each a figure with
// its 95% interval from the hierarchical bootstrap of stats.Resample,
// judged against a threshold with a margin clear of noise.

// load is the name of the load the checks read (the first).
func (r *Results) load() string { return r.Spec.Spec.Loads[0].Name }

// repeats is the most repeats any config of the results has.
func (r *Results) repeats() int {
	n := 0
	for _, c := range r.Summary.Configs {
		n = max(n, c.Repeats)
	}
	return n
}

// pointOf is a config summary's figure for a latency statistic.
func pointOf(c record.ConfigSummary, st stats.Stat) float64 {
	switch st.Q {
	case 0:
		return c.MeanMs
	case 0.5:
		return c.P50Ms
	case 0.9:
		return c.P90Ms
	case 0.99:
		return c.P99Ms
	case 0.999:
		return c.P999Ms
	}
	return math.NaN()
}

// cond builds a condition from a point and paired bootstrap draws.
func cond(name string, point float64, draws []float64, op string, thr float64, margin string) verdict.Condition {
	c := verdict.Condition{Name: name, Value: point, Op: op, Threshold: thr, Margin: margin, Draws: draws}
	if draws != nil {
		if iv, ok := stats.PercentileInterval(draws, point); ok {
			c.CI95 = &iv
		}
	}
	return c
}

// latencyRatio is a condition on a latency statistic of config num over
// den's (median over repeats, as the summary takes it), with the paired
// bootstrap interval.
func (r *Results) latencyRatio(name, num, den string, st stats.Stat, op string, thr float64, margin string) (verdict.Condition, error) {
	a, err := r.Config(num)
	if err != nil {
		return verdict.Condition{}, err
	}
	b, err := r.Config(den)
	if err != nil {
		return verdict.Condition{}, err
	}
	d := r.Summary.Draws(r.load(), []string{num, den}, st)
	c := cond(name, pointOf(a, st)/pointOf(b, st), stats.Ratio(d[0], d[1]), op, thr, margin)
	// A ratio of two positive figures: judged on the logs of its
	// per-repeat values (verdict.Condition.LogScale).
	c.PerRepeat = r.pairedRatios(num, den, st)
	c.LogScale = c.PerRepeat != nil
	return c, nil
}

// pairedRatios is st of num over st of den in each repeat that ran both
// (the configs of one repeat run back to back, so the ratio pairs them):
// the per-repeat values the stopping rule judges on
// (settle.RepeatInterval).
func (r *Results) pairedRatios(num, den string, st stats.Stat) []float64 {
	g := r.Summary.Groups(r.load(), []string{num, den}, func(run *record.Run) *stats.Sample { return r.Summary.Samples[run.ID] })
	var out []float64
	for i := range g[0] {
		if a, b := g[0][i], g[1][i]; a != nil && b != nil {
			out = append(out, st.Of(a)/st.Of(b))
		}
	}
	return out
}

// latencyOf is a condition on one config's latency statistic (ms).
func (r *Results) latencyOf(name, config string, st stats.Stat, op string, thr float64, margin string) (verdict.Condition, error) {
	a, err := r.Config(config)
	if err != nil {
		return verdict.Condition{}, err
	}
	d := r.Summary.Draws(r.load(), []string{config}, st)
	return cond(name, pointOf(a, st), d[0], op, thr, margin), nil
}

// samplesPer builds each config's per-repeat samples of a per-run figure
// (values from f) and resamples st of them: draws[g][b], the points
// (median over repeats of st of each run's values), and st of each
// config's run in each repeat, per[g][repeat] (NaN where the repeat has no
// such run, or it had no values): the per-repeat figures a condition's
// PerRepeat is made of (perRatio, perDiff).
func (r *Results) samplesPer(configs []string, st stats.Stat, f func(run *record.Run) ([]float64, error)) ([][]float64, []float64, [][]float64, error) {
	smp := map[string]*stats.Sample{}
	points := make([]float64, len(configs))
	for g, c := range configs {
		var per []float64
		for _, run := range r.runsOf(c) {
			v, err := f(run)
			if err != nil {
				return nil, nil, nil, err
			}
			s := stats.NewSample(v)
			smp[run.ID] = s
			if len(v) > 0 {
				per = append(per, st.Of(s))
			}
		}
		if len(per) == 0 {
			return nil, nil, nil, fmt.Errorf("no data for config %q", c)
		}
		points[g] = stats.Median(per)
	}
	groups := r.Summary.Groups(r.load(), configs, func(run *record.Run) *stats.Sample { return smp[run.ID] })
	per := make([][]float64, len(groups))
	for g := range groups {
		for _, s := range groups[g] {
			v := math.NaN()
			if s != nil && len(s.Sorted) > 0 {
				v = st.Of(s)
			}
			per[g] = append(per[g], v)
		}
	}
	return stats.Resample(groups, st, stats.Resamples, stats.BootstrapSeed), points, per, nil
}

// perRatio is a over b in each repeat (NaN where either is missing:
// settle.RepeatInterval leaves NaNs out).
func perRatio(a, b []float64) []float64 {
	out := make([]float64, min(len(a), len(b)))
	for i := range out {
		out[i] = a[i] / b[i]
	}
	return out
}

// perDiff is a less b in each repeat.
func perDiff(a, b []float64) []float64 {
	out := make([]float64, min(len(a), len(b)))
	for i := range out {
		out[i] = a[i] - b[i]
	}
	return out
}

// records reads a run's request records.
func (r *Results) records(run *record.Run) ([]loadgen.Record, error) {
	return record.ReadRequests(record.RunIDDir(r.Dir, run.ID))
}

// sameInstance is each consecutive pair of a run's requests (in the order
// their targets were picked) as 1 when both went to the same instance.
func (r *Results) sameInstance(run *record.Run) ([]float64, error) {
	recs, err := r.records(run)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(recs, func(a, b loadgen.Record) int { return int(a.Seq - b.Seq) })
	v := make([]float64, 0, len(recs))
	for i := 1; i < len(recs); i++ {
		same := 0.0
		if recs[i].Target == recs[i-1].Target {
			same = 1
		}
		v = append(v, same)
	}
	return v, nil
}

// busyBlocks is the CPU the run's groups (instances and neighbours) kept
// busy in each whole second of usage.csv, in cores.
func (r *Results) busyBlocks(run *record.Run) ([]float64, error) {
	path := filepath.Join(record.RunIDDir(r.Dir, run.ID), record.UsageFile)
	c, err := record.ReadColumns(path)
	if err != nil {
		return nil, err
	}
	at, sum := make([]float64, len(c.At)), make([]float64, len(c.At))
	for k, t := range c.At {
		at[k] = float64(t)
		for _, col := range c.Cols {
			sum[k] += float64(col[k])
		}
	}
	var out []float64
	j := 0
	for k := range at {
		if at[k]-at[j] >= 1e9 {
			out = append(out, (sum[k]-sum[j])/(at[k]-at[j]))
			j = k
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: under a second of samples", path)
	}
	return out, nil
}
