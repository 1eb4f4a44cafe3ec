package cfs_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/cfs/cfstest"
)

// BenchmarkReplayMany replays, on 4 hours of the flat day's samples
// (cfstest.Day: 1.44 M, more than a CPU's caches hold), 12 settings around
// the mean use (6 limits from 0.95x to 1.2x of it, each with and without a
// burst of one quota: the band's points where work waits in most periods
// and every sample is walked) with delays, each on its own (Replay: the
// reference) and in walks of K settings at once (ReplayMany), and reports
// each K's time and CPU as a ratio to the reference's, taken in
// alternating rounds (medians).
func BenchmarkReplayMany(b *testing.B) {
	at, usage := cfstest.Day(1_440_000)
	d := cfs.FromSamples(at, usage)
	period := 100 * time.Millisecond
	ps := cfs.Cut(d, period, 30*time.Millisecond)
	var settings []cfs.Setting
	for i := range 6 {
		q := time.Duration(d.MeanCores() * (0.95 + 0.05*float64(i)) * float64(period)).Round(time.Millisecond)
		settings = append(settings, cfs.Setting{Quota: q, Cores: d.Bound()}, cfs.Setting{Quota: q, Burst: q, Cores: d.Bound()})
	}
	hists := make([]*cfs.DelayHist, len(settings))
	for i := range hists {
		hists[i] = &cfs.DelayHist{}
	}
	var sc cfs.Scratch
	run := func(k int) time.Duration { // walks of k settings
		start := time.Now()
		for i := 0; i < len(settings); i += k {
			j := min(i+k, len(settings))
			if k == 1 {
				ps.Replay(settings[i], hists[i], &sc)
				continue
			}
			ps.ReplayMany(settings[i:j], hists[i:j], &sc)
		}
		return time.Since(start)
	}
	ks := []int{1, 2, 3, 4, 6, 12}
	times := make([][]float64, len(ks))
	for range b.N * 3 {
		for i, k := range ks {
			times[i] = append(times[i], float64(run(k)))
		}
	}
	median := func(xs []float64) float64 { xs = slices.Clone(xs); slices.Sort(xs); return xs[len(xs)/2] }
	one := median(times[0])
	b.ReportMetric(one/1e9, "s/one-by-one")
	for i, k := range ks[1:] {
		b.ReportMetric(median(times[i+1])/one, fmt.Sprintf("K%d/one-by-one", k))
	}
}
