package advise

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/throttlelab/throttlelab/stats"
	"github.com/throttlelab/throttlelab/units"
)

type baseline struct {
	name, how string
	milli     int64  // 0: missing (why says why)
	windows   int    // windows the percentile was taken over (0: none)
	why       string // why the baseline is missing
}

// windowAverages returns the mean use (cores) of every window of length w
// that starts at a sample, stepping by at least step; none if the samples
// span less than w.
func windowAverages(d *Demand, w, step time.Duration) []float64 {
	var out []float64
	j := 0
	last := time.Duration(-1 << 62)
	for i := range d.At {
		if d.At[i]-last < step {
			continue
		}
		for j < len(d.At) && d.At[j]-d.At[i] < w {
			j++
		}
		if j == len(d.At) {
			// the last window may end a sample short of w (99%)
			if k := len(d.At) - 1; d.At[k]-d.At[i] >= w*99/100 {
				out = append(out, float64(d.Usage[k]-d.Usage[i])/float64(d.At[k]-d.At[i]))
			}
			break
		}
		out = append(out, float64(d.Usage[j]-d.Usage[i])/float64(d.At[j]-d.At[i]))
		last = d.At[i]
	}
	return out
}

// percentile is the p-th percentile of v (sorted here) by stats.Rank; 0
// for none.
func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	return stats.Percentile(v, p)
}

func milliOf(cores float64) int64 {
	if cores <= 0 {
		return 0
	}
	return max(int64(math.Ceil(cores*1000-1e-9)), 1)
}

// baselinesOf computes what coarse recommenders would set from d: krr's
// default (p95 of 75 s rate windows; krr itself sets that as the request
// and no limit), krr's simple_limit (p96 as the limit), the VPA target
// (p90 of 1-minute samples plus 15%), and the mean.
func baselinesOf(d *Demand) []baseline {
	w75 := windowAverages(d, 75*time.Second, time.Second)
	w60 := windowAverages(d, time.Minute, time.Second)
	pct := func(b baseline, v []float64, w time.Duration, p, scale float64) baseline {
		b.windows = len(v)
		if len(v) == 0 {
			b.why = fmt.Sprintf("needs %.0f s of samples, has %.1f s", w.Seconds(), d.Duration().Seconds())
			return b
		}
		b.milli = milliOf(percentile(append([]float64(nil), v...), p) * scale)
		return b
	}
	return []baseline{
		pct(baseline{name: "krr default", how: "p95 of 75 s averages (krr sets it as the request, no limit)"}, w75, 75*time.Second, 95, 1),
		pct(baseline{name: "krr simple_limit", how: "p96 of 75 s averages as the limit (p66 as the request)"}, w75, 75*time.Second, 96, 1),
		pct(baseline{name: "VPA target", how: "p90 of 1-minute averages + 15%"}, w60, time.Minute, 90, 1.15),
		{name: "mean", how: "the mean use over the samples", milli: milliOf(d.MeanCores())},
	}
}

func formatMilli(m int64) string { return units.FormatMilliCPU(m) }
