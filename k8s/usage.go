package k8s

import (
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/server"
)

// MergeWindows lines the servers' own sampling windows up on one grid of
// interval steps, as the local backend's sampler reads every group at the
// same instant: from the later of from and the last window's first sample
// to the earlier of to and the first window's last sample (zero from or to:
// no bound). Each server sampled on its own clock; usage, a cumulative
// counter, is interpolated linearly between a server's two samples around
// a grid instant, and the throttled count is the one of its last sample at
// or before it. Windows are aligned on their Started wall-clock times,
// which is exact for pods on one node (one clock) and NTP-close across
// nodes. It returns nil if the windows do not overlap.
func MergeWindows(ws []*server.CgroupWindow, from, to time.Time, interval time.Duration) []cgroup.UsageSample {
	if len(ws) == 0 {
		return nil
	}
	lo, hi := from, to
	for _, w := range ws {
		if len(w.Samples) == 0 {
			return nil
		}
		first := w.Started
		last := w.Started.Add(time.Duration(w.Samples[len(w.Samples)-1].TNs))
		if lo.IsZero() || first.After(lo) {
			lo = first
		}
		if hi.IsZero() || last.Before(hi) {
			hi = last
		}
	}
	if !hi.After(lo) {
		return nil
	}
	idx := make([]int, len(ws))
	var out []cgroup.UsageSample
	for at := lo; !at.After(hi); at = at.Add(interval) {
		u := cgroup.UsageSample{At: at.Sub(lo), Usage: make([]time.Duration, len(ws)), Throttled: make([]uint64, len(ws)), Periods: make([]uint64, len(ws))}
		for i, w := range ws {
			t := int64(at.Sub(w.Started))
			s := w.Samples
			for idx[i]+1 < len(s) && s[idx[i]+1].TNs <= t {
				idx[i]++
			}
			a := s[idx[i]]
			u.Usage[i], u.Throttled[i], u.Periods[i] = time.Duration(a.UsageNs), a.Throttled, a.Periods
			if idx[i]+1 < len(s) && t > a.TNs {
				b := s[idx[i]+1]
				frac := float64(t-a.TNs) / float64(b.TNs-a.TNs)
				u.Usage[i] = time.Duration(float64(a.UsageNs) + frac*float64(b.UsageNs-a.UsageNs))
			}
		}
		out = append(out, u)
	}
	return out
}
