package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Interval is a 95% confidence interval, [low, high], as summary.json and
// verdict.json write it.
type Interval [2]float64

// Contains says whether v lies in the interval.
func (iv Interval) Contains(v float64) bool { return iv[0] <= v && v <= iv[1] }

// Resamples is how many bootstrap resamples an interval is drawn from, and
// BootstrapSeed the fixed seed of their generator: the same results give the
// same intervals, byte for byte.
const (
	Resamples     = 1000
	BootstrapSeed = 0x7468726f74746c65 // "throttle"
)

// Sample is one run's values of one kind (latencies in ms, per-cycle
// goodput, 0/1 indicators), sorted, with their mean and standard deviation:
// what the bootstrap needs to resample the run's requests.
type Sample struct {
	Sorted   []float64
	Mean, SD float64
}

// NewSample sorts v (in place) into a Sample.
func NewSample(v []float64) *Sample {
	slices.Sort(v)
	s := &Sample{Sorted: v}
	if len(v) == 0 {
		return s
	}
	for _, x := range v {
		s.Mean += x
	}
	s.Mean /= float64(len(v))
	if len(v) > 1 {
		var ss float64
		for _, x := range v {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.SD = math.Sqrt(ss / float64(len(v)-1))
	}
	return s
}

// Stat is a statistic of one run's sample: a quantile (Q in (0, 1]) or,
// with Q 0, the mean.
type Stat struct{ Q float64 }

// Mean is the mean as a Stat; Quantile(p) the p-th percentile.
var Mean = Stat{}

// Quantile is the p-th percentile (0 < p <= 100) as a Stat.
func Quantile(p float64) Stat { return Stat{Q: p / 100} }

// Rank is the 1-based order statistic throttlelab reports as the
// q-quantile (0 < q <= 1) of n values: the nearest rank, q n rounded half
// up, at least 1 and at most n. It is the rule of the HDR histograms that
// the load generator's summaries (p50, p99 in summary.json) come from
// (hdrhistogram-go's ValueAtQuantile), so a percentile computed from raw
// values anywhere else (bootstrap intervals, the report's percentile
// plots, advise's coarse recommenders) is the same statistic. The one
// definition: do not round up or interpolate elsewhere. (Where q n < 0.5
// the histogram answers below every recorded value; Rank keeps to the
// smallest.)
func Rank(q float64, n int) int {
	return min(max(int(q*float64(n)+0.5), 1), n)
}

// Percentile is the p-th percentile (0 < p <= 100) of sorted, by Rank; NaN
// for no values.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return sorted[Rank(p/100, len(sorted))-1]
}

// Of computes the statistic of a sample (NaN for none).
func (st Stat) Of(s *Sample) float64 {
	n := len(s.Sorted)
	if n == 0 {
		return math.NaN()
	}
	if st.Q == 0 {
		return s.Mean
	}
	return s.Sorted[Rank(st.Q, n)-1]
}

// draw computes the statistic of a resample of s with replacement, without
// drawing its n values: the k-th smallest of n uniform draws is
// Beta(k, n-k+1), and a uniform u picks the value of rank ceil(u n), a
// monotone map, so the resample's k-th smallest value is the one of rank
// ceil(U n) with U ~ Beta(k, n-k+1). The mean of a resample is drawn from
// its normal approximation, N(mean, sd/sqrt(n)). Each draw is O(1).
func (st Stat) draw(s *Sample, rng *rand.Rand) float64 {
	n := len(s.Sorted)
	if n == 0 {
		return math.NaN()
	}
	if st.Q == 0 {
		return s.Mean + rng.NormFloat64()*s.SD/math.Sqrt(float64(n))
	}
	k := Rank(st.Q, n)
	x, y := gamma(float64(k), rng), gamma(float64(n-k+1), rng)
	u := x / (x + y)
	i := int(math.Ceil(u*float64(n))) - 1
	return s.Sorted[min(max(i, 0), n-1)]
}

// gamma draws from Gamma(a, 1) for a >= 1 (Marsaglia and Tsang, 2000).
func gamma(a float64, rng *rand.Rand) float64 {
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

// Resample draws the bootstrap distribution of a statistic over groups of
// runs: groups[g][r] is group g's sample in repeat slot r (nil where that
// repeat is missing). The bootstrap is hierarchical: each of the resamples
// draws the repeat slots with replacement, the same slots for every group
// (configs of one repeat share its seed, so they are compared within it),
// then each drawn run's requests with replacement (see Stat.draw); a
// group's value is the median over its drawn runs of the statistic, as the
// summary takes medians over repeats. With one repeat only the requests are
// resampled, so the interval leaves out run-to-run variation. The result is
// out[g][b], the statistic of group g in resample b (NaN where a group has
// no run). The generator is seeded with seed: the same input gives the same
// draws.
func Resample(groups [][]*Sample, st Stat, resamples int, seed uint64) [][]float64 {
	slots := 0
	for _, g := range groups {
		slots = max(slots, len(g))
	}
	out := make([][]float64, len(groups))
	for g := range out {
		out[g] = make([]float64, resamples)
	}
	if slots == 0 {
		for g := range out {
			for b := range out[g] {
				out[g][b] = math.NaN()
			}
		}
		return out
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	pick := make([]int, slots)
	vals := make([]float64, 0, slots)
	for b := 0; b < resamples; b++ {
		for i := range pick {
			pick[i] = rng.IntN(slots)
		}
		for g, runs := range groups {
			vals = vals[:0]
			for _, i := range pick {
				if i < len(runs) && runs[i] != nil && len(runs[i].Sorted) > 0 {
					vals = append(vals, st.draw(runs[i], rng))
				}
			}
			if len(vals) == 0 {
				// None of this group's repeats was drawn: its own runs.
				for _, s := range runs {
					if s != nil && len(s.Sorted) > 0 {
						vals = append(vals, st.draw(s, rng))
					}
				}
			}
			if len(vals) == 0 {
				out[g][b] = math.NaN()
				continue
			}
			out[g][b] = Median(vals)
		}
	}
	return out
}

// PercentileInterval is the 95% percentile interval of bootstrap draws
// (NaNs left out), widened to contain point: the summary's points come from
// HDR histograms, whose rounding (under 0.1%) can put a point a hair
// outside an interval drawn from the exact records. ok is false without
// draws.
func PercentileInterval(draws []float64, point float64) (Interval, bool) {
	v := make([]float64, 0, len(draws))
	for _, d := range draws {
		if !math.IsNaN(d) && !math.IsInf(d, 0) {
			v = append(v, d)
		}
	}
	if len(v) == 0 {
		return Interval{}, false
	}
	slices.Sort(v)
	iv := Interval{Percentile(v, 2.5), Percentile(v, 97.5)}
	if !math.IsNaN(point) && !math.IsInf(point, 0) {
		iv[0], iv[1] = min(iv[0], point), max(iv[1], point)
	}
	return iv, true
}

// Ratio divides two groups' draws resample by resample (paired).
func Ratio(num, den []float64) []float64 {
	out := make([]float64, len(num))
	for i := range num {
		out[i] = num[i] / den[i]
	}
	return out
}

// Difference subtracts two groups' draws resample by resample (paired).
func Difference(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] - b[i]
	}
	return out
}
