package presets

import (
	"fmt"
	"maps"
	"slices"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/stats"
)

// Results is what a preset's check reads: a finished results directory.
type Results struct {
	Dir     string
	Spec    *experiment.Experiment
	Env     record.Env
	Runs    []*record.Run
	Summary *record.ExperimentSummary
}

// ReadResults reads a results directory for a check.
func ReadResults(dir string) (*Results, error) { return readResults(dir, nil) }

// readResults is ReadResults with the runs' summary already read (nil:
// sum them up and read their requests for the intervals).
func readResults(dir string, s *record.ExperimentSummary) (*Results, error) {
	e, env, runs, err := record.ReadResults(dir)
	if err != nil {
		return nil, err
	}
	if s == nil {
		s = record.Summarize(e, runs)
		smp, err := record.ReadSamples(dir, runs)
		if err != nil {
			return nil, err
		}
		s.AddIntervals(smp)
	}
	return &Results{Dir: dir, Spec: e, Env: env, Runs: runs, Summary: s}, nil
}

// Config returns a config's summary under the first load.
func (r *Results) Config(name string) (record.ConfigSummary, error) {
	for _, c := range r.Summary.Configs {
		if c.Config == name {
			return c, nil
		}
	}
	return record.ConfigSummary{}, fmt.Errorf("no finished runs of config %q", name)
}

// runsOf returns the runs of a config.
func (r *Results) runsOf(name string) []*record.Run {
	var out []*record.Run
	for _, run := range r.Runs {
		if run.Config == name {
			out = append(out, run)
		}
	}
	return out
}

// median of f over a config's runs.
func (r *Results) median(name string, f func(*record.Run) float64) (float64, error) {
	runs := r.runsOf(name)
	if len(runs) == 0 {
		return 0, fmt.Errorf("no finished runs of config %q", name)
	}
	v := make([]float64, len(runs))
	for i, run := range runs {
		v[i] = f(run)
	}
	return stats.Median(v), nil
}

// MeanLatency is the median over repeats of the mean latency (ms).
func (r *Results) MeanLatency(name string) (float64, error) {
	return r.median(name, func(s *record.Run) float64 { return s.Summary.Latency.Mean })
}

// SameInstance is the median same-instance rate of consecutive requests.
func (r *Results) SameInstance(name string) (float64, error) {
	return r.median(name, func(s *record.Run) float64 { return s.Summary.SameInstanceRate })
}

// NeighbourUsage returns a neighbour's usage in a config's runs: the mean of
// the means and the highest 100 ms and 1 s windows.
func (r *Results) NeighbourUsage(config, name string) (record.UsageStats, error) {
	var u record.UsageStats
	n := 0
	for _, run := range r.runsOf(config) {
		for _, g := range slices.Sorted(maps.Keys(run.NeighbourUsage)) {
			s := run.NeighbourUsage[g]
			if record.IsNeighbourGroup(g, name) {
				u.Mean += s.Mean
				u.Peak100ms = max(u.Peak100ms, s.Peak100ms)
				u.Peak1s = max(u.Peak1s, s.Peak1s)
				n++
			}
		}
	}
	if n == 0 {
		return u, fmt.Errorf("no usage of neighbour %q in config %q", name, config)
	}
	u.Mean /= float64(n)
	return u, nil
}

// MachineBusy is the mean number of cores a config's runs kept busy: its
// instances and all neighbours (the load generator aside).
func (r *Results) MachineBusy(config string) (float64, error) {
	return r.median(config, func(s *record.Run) float64 {
		// Summed in name order: a sum in map order differs in its last bits
		// from run to run, and verdicts are compared byte for byte.
		b := 0.0
		for _, name := range slices.Sorted(maps.Keys(s.Usage)) {
			b += s.Usage[name].Mean
		}
		for _, name := range slices.Sorted(maps.Keys(s.NeighbourUsage)) {
			b += s.NeighbourUsage[name].Mean
		}
		return b
	})
}

// BurstGoodput is a burst neighbour's mean goodput per cycle (iterations of
// all its workers) over a config's runs; cycles cut short by the end of the
// run are not in the file.
func (r *Results) BurstGoodput(config, name string) (float64, int, error) {
	var sum float64
	n := 0
	for _, run := range r.runsOf(config) {
		cycles, err := record.ReadBurstCycles(record.RunIDDir(r.Dir, run.ID), name)
		if err != nil {
			return 0, 0, err
		}
		for _, c := range cycles {
			sum += float64(c.Total)
			n++
		}
	}
	if n == 0 {
		return 0, 0, fmt.Errorf("no burst cycles of %q in config %q", name, config)
	}
	return sum / float64(n), n, nil
}

// meanStall is the mean time a config's requests were runnable but not
// running in the server (wall - CPU - queue, from Server-Timing), in ms.
func (r *Results) meanStall(config string) (float64, error) {
	var sum float64
	n := 0
	for _, run := range r.runsOf(config) {
		recs, err := r.records(run)
		if err != nil {
			return 0, err
		}
		for _, rec := range recs {
			if rec.Err == "" && rec.ServerCPU >= 0 && rec.ServerWall >= 0 {
				sum += float64(max(rec.ServerWall-rec.ServerCPU-max(rec.ServerQueue, 0), 0)) / 1e6
				n++
			}
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("no server timing in config %q", config)
	}
	return sum / float64(n), nil
}

// Latencies returns every successful request's latency (ms) in a config's runs.
func (r *Results) Latencies(config string) ([]float64, error) {
	var out []float64
	for _, run := range r.runsOf(config) {
		recs, err := record.ReadRequests(record.RunIDDir(r.Dir, run.ID))
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			if rec.Err == "" {
				out = append(out, float64(rec.Latency)/1e6)
			}
		}
	}
	return out, nil
}
