package runner_test

import (
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/report"
)

// TestCountLadderSimulated checks the one pass (cfs.CountLadder) against the
// per-point replay on the demand the report's Advice section advises on in
// sim f01-logjam: the unlimited config's use, and the limited config's
// rebuilt from its throttling counters (work the limit held back, moved
// back to where it arrived). The simulator's round numbers put period sums
// and queues exactly on quotas, ties the random demand of cfs's property
// test does not make. Every count the one pass calls exact must be
// Replay's, at every grid point and phase.
func TestCountLadderSimulated(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates f01-logjam")
	}
	s := simulatedLogJam(t)
	n := 0
	for _, src := range s.Sources {
		seen := map[string]bool{}
		for _, r := range src.Runs {
			if seen[r.Config] || len(r.Instances) == 0 {
				continue
			}
			seen[r.Config] = true
			for i := range r.Groups {
				g := &r.Groups[i]
				if report.InstanceName(g.Name) != r.Instances[0] {
					continue
				}
				d := r.Run.Demand(r.Instances[0], g.At, g.Usage, g.Throttled).Demand.Pinned()
				n++
				period := 100 * time.Millisecond
				var settings []cfs.Setting
				for _, l := range advise.Grid(d, 25) {
					pt := advise.Point{LimitMilli: l, Period: period}
					settings = append(settings, cfs.Setting{Quota: pt.Quota(), Cores: d.Bound()}, cfs.Setting{Quota: pt.Quota(), Burst: pt.Quota(), Cores: d.Bound()})
				}
				var left, total int
				for ph := range 10 {
					ps := cfs.Cut(d, period, period*time.Duration(ph)/10)
					for k, c := range ps.CountLadder(settings) {
						total++
						if !c.Exact {
							left++
							continue
						}
						res := ps.Replay(settings[k], &cfs.DelayHist{}, nil)
						if c.Periods != res.Stat.Periods || c.ThrottledPeriods != res.Stat.ThrottledPeriods {
							t.Errorf("config %s (rebuilt %v), phase %d, quota %s burst %s: one pass %d/%d throttled, replay %d/%d",
								r.Config, d.Moved > 0, ph, settings[k].Quota, settings[k].Burst, c.ThrottledPeriods, c.Periods, res.Stat.ThrottledPeriods, res.Stat.Periods)
						}
					}
				}
				t.Logf("config %s (rebuilt %v): %d of %d settings and phases left to Replay", r.Config, d.Moved > 0, left, total)
				break
			}
		}
	}
	if n != 2 {
		t.Fatalf("%d configs advised on, want 2", n)
	}
}
