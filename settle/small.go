package settle

import (
	"math"
	"sync"

	"github.com/throttlelab/throttlelab/stats"
)

// MinJudge is the fewest repeats a look judges at. A look with fewer is a
// pilot: it measures what a repeat costs and judges nothing, because an
// interval from one or two repeats leaves out or badly underrates the
// run-to-run variation (settle_test.go measures the false-verdict rate a
// one- or two-repeat look would give).
const MinJudge = 3

// Widen widens an interval of a look at repeats repeats around point by
// the small-sample factor sqrt(n/(n-1)) * t(n-1)/z at level: a bootstrap
// of n repeats spreads as a normal interval with the plug-in variance,
// which is (n-1)/n of the unbiased one and uses z where Student's t with
// n-1 degrees of freedom holds. With the factor the interval of a mean of
// n repeats is Student's t interval, so the stated rate holds when the
// run-to-run variation dominates (the worst case), and it errs wide
// otherwise. Fewer than two repeats: returned as it is (a pilot look
// judges nothing).
func Widen(iv stats.Interval, point float64, repeats int, level float64) stats.Interval {
	if repeats < 2 || math.IsNaN(point) || math.IsInf(point, 0) {
		return iv
	}
	n := float64(repeats)
	f := math.Sqrt(n/(n-1)) * studentQuantile(1-(1-level)/2, n-1) / normalQuantile(1-(1-level)/2)
	return stats.Interval{point - f*(point-iv[0]), point + f*(iv[1]-point)}
}

// normalQuantile is the standard normal's p quantile.
func normalQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// quantiles caches studentQuantile by its arguments: every look of every
// condition asks for the same few.
var quantiles sync.Map

// studentQuantile is the p quantile (p above 0.5) of Student's t with df
// degrees of freedom, by bisection on its distribution function.
func studentQuantile(p, df float64) float64 {
	key := [2]float64{p, df}
	if q, ok := quantiles.Load(key); ok {
		return q.(float64)
	}
	q := bisectQuantile(p, df)
	quantiles.Store(key, q)
	return q
}

// bisectQuantile is studentQuantile uncached.
func bisectQuantile(p, df float64) float64 {
	lo, hi := 0.0, 1.0
	for studentCDF(hi, df) < p {
		hi *= 2
	}
	for range 100 {
		mid := (lo + hi) / 2
		if studentCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// studentCDF is Student's t distribution function at x >= 0: one half plus
// half the regularized incomplete beta I(df/(df+x^2); df/2, 1/2) taken
// from one, written through the density's integral over [0, x] in the
// variable u = atan(x/sqrt(df)), where it is smooth for every df.
func studentCDF(x, df float64) float64 {
	lg1, _ := math.Lgamma((df + 1) / 2)
	lg2, _ := math.Lgamma(df / 2)
	c := math.Exp(lg1-lg2) / math.Sqrt(math.Pi)
	// With x = sqrt(df) tan u the density times dx is
	// c cos(u)^(df-1) du.
	top := math.Atan(x / math.Sqrt(df))
	const steps = 2000
	h := top / steps
	sum := 0.0
	for i := 0; i <= steps; i++ {
		w := 2.0
		switch {
		case i == 0 || i == steps:
			w = 1
		case i%2 == 1:
			w = 4
		}
		sum += w * math.Pow(math.Cos(float64(i)*h), df-1)
	}
	return 0.5 + c*sum*h/3
}

// RepeatInterval is the level interval of a condition from its per-repeat
// values (the figure computed from each repeat's runs alone, every config
// of one repeat having run back to back, so a ratio of two configs pairs
// them within the repeat): Student's t interval of their mean with n-1
// degrees of freedom, widened to contain point as Interval widens its
// interval. It is exact for normal per-repeat values whatever the split
// between run-to-run and within-run variation, where a bootstrap widened
// by Widen errs wide when the within-run part is large. NaNs are left out;
// ok is false under two values.
func RepeatInterval(values []float64, point, level float64) (stats.Interval, bool) {
	v := finite(values)
	n := len(v)
	if n < 2 {
		return stats.Interval{}, false
	}
	mean, ss := meanSS(v)
	return tInterval(mean, ss/float64(n-1), n, n-1, point, level), true
}

// tInterval is the level t interval of a mean of n values whose variance
// is s2, with df degrees of freedom, widened to contain point (when it is
// a number) as Interval widens its interval.
func tInterval(mean, s2 float64, n, df int, point, level float64) stats.Interval {
	half := studentQuantile(1-(1-level)/2, float64(df)) * math.Sqrt(s2/float64(n))
	iv := stats.Interval{mean - half, mean + half}
	if !math.IsNaN(point) && !math.IsInf(point, 0) {
		iv[0], iv[1] = min(iv[0], point), max(iv[1], point)
	}
	return iv
}

// RepeatsNeeded is the fewest repeats, more than n, at which a t interval
// now of half-width half, from n values with df degrees of freedom at
// level, would likely shrink to dist (the point's distance from the
// threshold), the spread staying what it is: its standard error shrinks
// as 1/sqrt(repeats), and its quantile with the degree of freedom each
// repeat adds, which at few repeats is most of the shrinking (at 98.18%
// the quantile is 7.30 with 2 degrees of freedom and 3.06 with 7). most
// when even most repeats would not (or for an interval it cannot read).
func RepeatsNeeded(n, df int, half, dist, level float64, most int) int {
	if n < 1 || df < 1 || !(half > 0) || !(dist > 0) {
		return most
	}
	q := 1 - (1-level)/2
	sd := half / studentQuantile(q, float64(df)) * math.Sqrt(float64(n))
	for m := n + 1; m < most; m++ {
		if studentQuantile(q, float64(df+m-n))*sd/math.Sqrt(float64(m)) <= dist {
			return m
		}
	}
	return most
}
