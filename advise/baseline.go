package advise

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/throttlelab/throttlelab/stats"
	"github.com/throttlelab/throttlelab/units"
)

// windowAverages returns the mean use (cores) of every window of length w
// that starts at a sample, stepping by at least step; none if the samples
// span less than w.
func windowAverages(d *Demand, w, step time.Duration) []float64 {
	var out []float64
	if step > 0 {
		out = make([]float64, 0, d.Duration()/step+1) // no more: they start step apart or more
	}
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

// BaselineRule is a coarse recommender's rule: a percentile of the mean use
// over windows of a length, times a margin, or (Window 0) the mean use.
// advise and the agent's summary apply the same rules to their own window
// averages.
type BaselineRule struct {
	Name, How string
	// Window is the length the use is averaged over; 0: the mean use.
	Window time.Duration
	// Percentile (0-100) of the window averages, times Scale.
	Percentile, Scale float64
}

// The coarse recommenders: krr's default (p95 of 75 s rate windows; krr
// itself sets that as the request and no limit), krr's simple_limit (p96 as
// the limit), the VPA target (p90 of 1-minute samples plus 15%), and the
// mean.
var (
	KrrDefault     = BaselineRule{Name: "krr default", How: "p95 of 75 s averages (krr sets it as the request, no limit)", Window: 75 * time.Second, Percentile: 95, Scale: 1}
	KrrSimpleLimit = BaselineRule{Name: "krr simple_limit", How: "p96 of 75 s averages as the limit (p66 as the request)", Window: 75 * time.Second, Percentile: 96, Scale: 1}
	VPATarget      = BaselineRule{Name: "VPA target", How: "p90 of 1-minute averages + 15%", Window: time.Minute, Percentile: 90, Scale: 1.15}
	MeanUse        = BaselineRule{Name: "mean", How: "the mean use over the samples"}
	// BaselineRules are the rules every advice shows, in its order.
	BaselineRules = []BaselineRule{KrrDefault, KrrSimpleLimit, VPATarget, MeanUse}
)

// BaselineLimit is what a rule sets from one demand.
type BaselineLimit struct {
	BaselineRule
	// Windows is how many averaging windows the percentile was taken over.
	Windows int
	// Milli is the limit in millicores; 0: none (Missing says why when the
	// samples were too short for one window).
	Milli   int64
	Missing string
}

// Apply applies r to the mean use (cores) of each window of r.Window that
// the samples cover, the mean use over them and their span.
func (r BaselineRule) Apply(averages []float64, meanCores, seconds float64) BaselineLimit {
	b := BaselineLimit{BaselineRule: r}
	if r.Window <= 0 {
		b.Milli = milliOf(meanCores)
		return b
	}
	b.Windows = len(averages)
	if len(averages) == 0 {
		b.Missing = fmt.Sprintf("needs %.0f s of samples, has %.1f s", r.Window.Seconds(), seconds)
		return b
	}
	b.Milli = milliOf(percentile(append([]float64(nil), averages...), r.Percentile) * r.Scale)
	return b
}

// Baselines applies every rule of BaselineRules: averages returns the mean
// use of each window of a length (called once per length).
func Baselines(averages func(window time.Duration) []float64, meanCores, seconds float64) []BaselineLimit {
	seen := map[time.Duration][]float64{}
	out := make([]BaselineLimit, 0, len(BaselineRules))
	for _, r := range BaselineRules {
		var v []float64
		if r.Window > 0 {
			var ok bool
			if v, ok = seen[r.Window]; !ok {
				v = averages(r.Window)
				seen[r.Window] = v
			}
		}
		out = append(out, r.Apply(v, meanCores, seconds))
	}
	return out
}

// baselinesOf applies the rules to d, over windows that step by 1 s.
func baselinesOf(d *Demand) []BaselineLimit {
	return Baselines(func(w time.Duration) []float64 { return windowAverages(d, w, time.Second) }, d.MeanCores(), d.Duration().Seconds())
}

func formatMilli(m int64) string { return units.FormatMilliCPU(m) }
