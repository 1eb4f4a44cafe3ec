package record

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/cgroup"
)

// ErrSeveralInstances: a config runs several instances and none was named.
var ErrSeveralInstances = errors.New("name one instance")

// InstanceDemand is one instance's (or neighbour's) CPU demand from a
// recorded run, as the quota model replays it.
type InstanceDemand struct {
	Demand  *cfs.Demand
	CPUStat cgroup.CPUStat
	// LimitMilli is the limit the run had (0: none).
	LimitMilli int64
	// PeriodUsec is its period (0 without a limit).
	PeriodUsec int64
	Source     string
}

// ReadDemand reads the usage of one instance or neighbour in the first
// finished run of config in a results directory (as run writes it; the
// local backend samples usage every 10 ms). instance may be empty when the
// config runs a single instance.
func ReadDemand(dir, config, instance string) (*InstanceDemand, error) {
	_, _, runs, err := ReadResults(dir)
	if err != nil {
		return nil, err
	}
	var configs []string
	for _, rs := range runs {
		if rs.Config != config {
			if !strings.Contains(strings.Join(configs, ","), rs.Config) {
				configs = append(configs, rs.Config)
			}
			continue
		}
		name := instance
		if name == "" {
			if len(rs.Instances) != 1 {
				return nil, fmt.Errorf("config %s runs %d instances (%s): %w", config, len(rs.Instances), strings.Join(rs.Instances, ", "), ErrSeveralInstances)
			}
			name = rs.Instances[0]
		}
		u, err := ReadUsage(RunIDDir(dir, rs.ID))
		if err != nil {
			return nil, err
		}
		col, ok := u.Column(rs.Index, name)
		if !ok {
			var have []string
			for _, g := range u.Groups {
				have = append(have, g[min(5, len(g)):])
			}
			return nil, fmt.Errorf("run %s has no instance or neighbour %q: it has %s", rs.ID, name, strings.Join(have, ", "))
		}
		var thr []uint64
		if st, ok := runStat(rs, name); ok && st.ThrottledPeriods > 0 {
			thr, _ = throttledColumn(RunIDDir(dir, rs.ID), u.At, rs.Index, name)
		}
		r := rs.Demand(name, u.At, col, thr)
		r.Source = fmt.Sprintf("%s run %s, %s", dir, rs.ID, name)
		return r, nil
	}
	return nil, fmt.Errorf("%s has no finished run of config %q: it has %s", dir, config, strings.Join(configs, ", "))
}

// Demand is the demand of one instance or neighbour (name) of the run,
// from its usage samples and, where the run has them, its cumulative
// nr_throttled at the same samples (nil: none). A group the run's limit
// throttled has its demand rebuilt from those counters
// (cfs.ReconstructNoted), since its limit spread its bursts. advise
// RESULTS_DIR and the reports' advice section both read a run through it,
// so they give the same advice.
func (rs *Run) Demand(name string, at, usage []time.Duration, throttled []uint64) *InstanceDemand {
	r := &InstanceDemand{Demand: cfs.FromSamples(at, usage)}
	st, _ := runStat(rs, name)
	r.CPUStat = st
	if _, ok := rs.CPUStat[name]; ok && rs.Settings.QuotaUsec > 0 && rs.Settings.PeriodUsec > 0 {
		r.LimitMilli = rs.Settings.QuotaUsec * 1000 / int64(rs.Settings.PeriodUsec)
		r.PeriodUsec = int64(rs.Settings.PeriodUsec)
	}
	if st.ThrottledPeriods > 0 && len(throttled) > 0 && len(throttled) == len(r.Demand.At) {
		period := 100 * time.Millisecond
		if rs.Settings.PeriodUsec > 0 {
			period = time.Duration(rs.Settings.PeriodUsec) * time.Microsecond
		}
		r.Demand = cfs.ReconstructNoted(r.Demand, throttled, period)
	}
	return r
}

// runStat is the cpu.stat a run recorded for its instance or neighbour name.
func runStat(rs *Run, name string) (cgroup.CPUStat, bool) {
	if st, ok := rs.CPUStat[name]; ok {
		return st, true
	}
	st, ok := rs.Neighbours[NeighbourGroup(rs.Index, name)]
	return st, ok
}

// throttledColumn reads the group's cumulative nr_throttled from a run's
// throttled.csv, if it has one sampled at the times at.
func throttledColumn(runDir string, at []time.Duration, index int, name string) ([]uint64, bool) {
	c, err := ReadColumns(filepath.Join(runDir, ThrottledFile))
	if err != nil || !c.SampledAt(at) {
		return nil, false
	}
	col := c.Column(InstanceGroup(index, name))
	if col == nil {
		col = c.Column(NeighbourGroup(index, name))
	}
	if col == nil {
		return nil, false
	}
	out := make([]uint64, len(col))
	for k, v := range col {
		out[k] = uint64(max(v, 0))
	}
	return out, true
}
