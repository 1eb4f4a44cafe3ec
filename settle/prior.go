package settle

import (
	"fmt"
	"math"

	"github.com/throttlelab/throttlelab/stats"
)

// Prior is a condition's run-to-run spread from earlier runs on the same
// machine: the standard deviation of its per-repeat values (as
// RepeatInterval reads them) pooled over those runs, with its degrees of
// freedom (the repeats less one per run), and where it came from.
type Prior struct {
	// SD is the pooled standard deviation of the per-repeat values.
	SD float64 `json:"sd"`
	// DF is its degrees of freedom: the sum over the runs of repeats
	// less one.
	DF int `json:"df"`
	// Repeats is how many repeats it pooled.
	Repeats int `json:"repeats"`
	// Date is when the runs ran (YYYY-MM-DD); Source names them.
	Date   string `json:"date"`
	Source string `json:"source"`
	// Scale is LogScale when SD is a spread of the natural logs of the
	// values (a ratio's), "" when of the values themselves: a prior
	// pools only with values on its own scale.
	Scale string `json:"scale,omitempty"`
}

// LogScale is Prior.Scale for a spread of natural logs.
const LogScale = "log"

// Logs is the natural logs of values, the scale a ratio's spread and
// interval are taken on (NaNs kept: the intervals leave them out); nil
// when a value is not above zero, which has no log.
func Logs(values []float64) []float64 {
	out := make([]float64, len(values))
	for i, x := range values {
		if x <= 0 {
			return nil
		}
		out[i] = math.Log(x)
	}
	return out
}

// GuardLevel is the level of the guard's F test: a look whose own
// per-repeat spread exceeds the prior's by more than the test's
// 1-GuardLevel quantile is judged on its own t interval alone, since the
// prior no longer describes the run. settle_test.go measures the
// false-verdict rate with true spreads 1.5 and 2 times the prior's.
const GuardLevel = 0.5

// Pooling says how a look's interval used a prior.
type Pooling struct {
	// Pooled is true when the interval used the pooled spread.
	Pooled bool
	// DF is the interval's degrees of freedom; N how many values it had.
	DF, N int
	// Words says it in the cell's words ("pooled with 7 earlier repeats
	// from 2026-11-29").
	Words string
}

// PooledInterval is RepeatInterval with a prior: when the look's own
// spread is consistent with the prior's (the guard's one-sided F test at
// GuardLevel does not reject it), the t interval of the mean of values
// with the pooled variance s_p^2 = ((n-1) s^2 + DF SD^2) / (n-1+DF) and
// n-1+DF degrees of freedom; otherwise, or without a prior (nil, or no
// spread), RepeatInterval. The pooled interval needs two values (one to
// check the guard on): a look with one value has no interval. Pooling says
// which it used.
func PooledInterval(values []float64, point, level float64, p *Prior) (stats.Interval, Pooling, bool) {
	v := finite(values)
	n := len(v)
	if p == nil || p.DF < 1 || !(p.SD > 0) || n < 2 {
		iv, ok := RepeatInterval(values, point, level)
		return iv, Pooling{DF: max(n-1, 0), N: n}, ok
	}
	mean, ss := meanSS(v)
	s2 := ss / float64(n-1)
	ratio := s2 / (p.SD * p.SD)
	if limit := fQuantile(1-GuardLevel, float64(n-1), float64(p.DF)); ratio > limit {
		iv, ok := RepeatInterval(values, point, level)
		return iv, Pooling{DF: n - 1, N: n, Words: fmt.Sprintf("own spread only: %s times the prior's from %s, above the %s its F test at %g%% allows",
			trim(math.Sqrt(ratio)), p.Date, trim(math.Sqrt(limit)), 100*GuardLevel)}, ok
	}
	df := n - 1 + p.DF
	sp2 := (ss + float64(p.DF)*p.SD*p.SD) / float64(df)
	iv := tInterval(mean, sp2, n, df, point, level)
	return iv, Pooling{Pooled: true, DF: df, N: n, Words: fmt.Sprintf("pooled with %d earlier repeats from %s", p.Repeats, p.Date)}, true
}

// finite is values without NaNs and infinities.
func finite(values []float64) []float64 {
	var v []float64
	for _, x := range values {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	return v
}

// meanSS is the mean of v and the sum of squares about it.
func meanSS(v []float64) (mean, ss float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, ss
}

// PriorOf pools the per-repeat values of earlier runs (one slice a run;
// runs with under two values add nothing) into a Prior: SD^2 = sum (n_i-1)
// s_i^2 / sum (n_i-1). ok is false when no run had two values, or none
// spread (a figure every repeat gives alike needs no prior).
func PriorOf(runs [][]float64, date, source string) (Prior, bool) {
	var ss float64
	df, reps := 0, 0
	for _, r := range runs {
		v := finite(r)
		if len(v) < 2 {
			continue
		}
		_, s := meanSS(v)
		ss += s
		df += len(v) - 1
		reps += len(v)
	}
	if df == 0 || ss == 0 {
		return Prior{}, false
	}
	return Prior{SD: math.Sqrt(ss / float64(df)), DF: df, Repeats: reps, Date: date, Source: source}, true
}

// fQuantile is the p quantile of the F distribution with d1 and d2 degrees
// of freedom, by bisection on its distribution function.
func fQuantile(p, d1, d2 float64) float64 {
	lo, hi := 0.0, 1.0
	for fCDF(hi, d1, d2) < p {
		hi *= 2
	}
	for range 100 {
		mid := (lo + hi) / 2
		if fCDF(mid, d1, d2) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// fCDF is the F distribution function: the regularized incomplete beta
// I(d1 x / (d1 x + d2); d1/2, d2/2).
func fCDF(x, d1, d2 float64) float64 {
	if x <= 0 {
		return 0
	}
	return betaInc(d1/2, d2/2, d1*x/(d1*x+d2))
}

// betaInc is the regularized incomplete beta I_x(a, b), by its continued
// fraction (Lentz's method) on the side where it converges fast.
func betaInc(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log(1-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

// betaCF is the continued fraction of the incomplete beta.
func betaCF(a, b, x float64) float64 {
	const tiny = 1e-300
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		num := fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm))
		d, c = 1+num*d, 1+num/c
		d = 1 / max(math.Abs(d), tiny) * sign(d)
		c = max(math.Abs(c), tiny) * sign(c)
		h *= d * c
		num = -(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1))
		d, c = 1+num*d, 1+num/c
		d = 1 / max(math.Abs(d), tiny) * sign(d)
		c = max(math.Abs(c), tiny) * sign(c)
		del := d * c
		h *= del
		if math.Abs(del-1) < 1e-14 {
			break
		}
	}
	return h
}

func sign(v float64) float64 {
	if v < 0 {
		return -1
	}
	return 1
}
