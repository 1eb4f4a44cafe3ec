package advise

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/record"
)

// Recorded is one instance's (or neighbour's) demand from a recorded run.
type Recorded struct {
	Demand  *Demand
	CPUStat cgroup.CPUStat
	// LimitMilli is the limit the run had (0: none).
	LimitMilli int64
	Source     string
}

// ReadRecorded reads the usage of one instance or neighbour in the first
// finished run of config in a results directory (as run writes it; the
// local backend samples usage every 10 ms). instance may be empty when the
// config runs a single instance.
func ReadRecorded(dir, config, instance string) (*Recorded, error) {
	_, _, runs, err := record.ReadResults(dir)
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
				return nil, fmt.Errorf("config %s runs %d instances (%s): pick one with --instance", config, len(rs.Instances), strings.Join(rs.Instances, ", "))
			}
			name = rs.Instances[0]
		}
		u, err := record.ReadUsage(filepath.Join(dir, "runs", rs.ID))
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
		r := &Recorded{Demand: FromSamples(u.At, col), Source: fmt.Sprintf("%s run %s, %s", dir, rs.ID, name)}
		if st, ok := rs.CPUStat[name]; ok {
			r.CPUStat = st
			if rs.Settings.QuotaUsec > 0 && rs.Settings.PeriodUsec > 0 {
				r.LimitMilli = rs.Settings.QuotaUsec * 1000 / int64(rs.Settings.PeriodUsec)
			}
		} else if st, ok := rs.Neighbours[record.NeighbourGroup(rs.Index, name)]; ok {
			r.CPUStat = st
		}
		if r.CPUStat.ThrottledPeriods > 0 {
			// Sampled under a limit that throttled: rebuilt from the run's
			// nr_throttled at the same samples, where it has them.
			if thr, ok := throttledColumn(filepath.Join(dir, "runs", rs.ID), u.At, rs.Index, name); ok {
				period := 100 * time.Millisecond
				if rs.Settings.PeriodUsec > 0 {
					period = time.Duration(rs.Settings.PeriodUsec) * time.Microsecond
				}
				r.Demand = ReconstructNoted(r.Demand, thr, period)
			}
		}
		return r, nil
	}
	return nil, fmt.Errorf("%s has no finished run of config %q: it has %s", dir, config, strings.Join(configs, ", "))
}

// throttledColumn reads the group's cumulative nr_throttled from a run's
// throttled.csv, if it has one sampled at the times at.
func throttledColumn(runDir string, at []time.Duration, index int, name string) ([]uint64, bool) {
	c, err := record.ReadColumns(filepath.Join(runDir, record.ThrottledFile))
	if err != nil || len(c.At) != len(at) {
		return nil, false
	}
	for i := range at {
		if c.At[i] != at[i] {
			return nil, false
		}
	}
	for i, g := range c.Names {
		if g == record.InstanceGroup(index, name) || g == record.NeighbourGroup(index, name) {
			out := make([]uint64, len(c.Cols[i]))
			for k, v := range c.Cols[i] {
				out[k] = uint64(max(v, 0))
			}
			return out, true
		}
	}
	return nil, false
}
