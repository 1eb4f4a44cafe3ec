package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

func expSample(n int, seed uint64, scale float64) *Sample {
	rng := rand.New(rand.NewPCG(seed, 1))
	v := make([]float64, n)
	for i := range v {
		v[i] = scale * rng.ExpFloat64()
	}
	return NewSample(v)
}

// TestDrawMatchesBruteForce: the O(1) draw of a resample's quantile has the
// distribution of the quantile of a resample drawn value by value.
func TestDrawMatchesBruteForce(t *testing.T) {
	s := expSample(500, 1, 10)
	rng := rand.New(rand.NewPCG(2, 2))
	for _, st := range []Stat{Quantile(50), Quantile(99), Mean} {
		const b = 4000
		fast, slow := make([]float64, b), make([]float64, b)
		re := make([]float64, len(s.Sorted))
		for i := 0; i < b; i++ {
			fast[i] = st.draw(s, rng)
			for j := range re {
				re[j] = s.Sorted[rng.IntN(len(re))]
			}
			slow[i] = st.Of(NewSample(re))
		}
		mf, sf := meanSD(fast)
		ms, ss := meanSD(slow)
		if math.Abs(mf-ms) > 0.1*ss+1e-9 || math.Abs(sf-ss) > 0.15*ss {
			t.Errorf("stat %v: fast draws mean %.4f sd %.4f, brute force %.4f sd %.4f", st, mf, sf, ms, ss)
		}
	}
}

func meanSD(v []float64) (float64, float64) {
	s := NewSample(slices.Clone(v))
	return s.Mean, s.SD
}

// TestIntervalCoverage: over many samples of a known distribution, the
// interval of the p99 holds the true p99 about 95% of the time.
func TestIntervalCoverage(t *testing.T) {
	truth := 10 * -math.Log(0.01) // p99 of an exponential of mean 10
	hit := 0
	const trials = 200
	for i := 0; i < trials; i++ {
		g := [][]*Sample{{expSample(2000, uint64(100+i), 10)}}
		d := Resample(g, Quantile(99), 400, uint64(i))
		iv, _ := PercentileInterval(d[0], Quantile(99).Of(g[0][0]))
		if iv.Contains(truth) {
			hit++
		}
	}
	if hit < trials*88/100 || hit > trials*99/100 {
		t.Errorf("the interval held the true p99 in %d of %d trials, want about 95%%", hit, trials)
	}
}

// TestRepeatsWiden: repeats that disagree widen the interval beyond what
// their requests alone give, and an interval holds its point.
func TestRepeatsWiden(t *testing.T) {
	a, b := expSample(1000, 1, 10), expSample(1000, 2, 20)
	one := Resample([][]*Sample{{a}}, Quantile(99), Resamples, BootstrapSeed)
	two := Resample([][]*Sample{{a, b}}, Quantile(99), Resamples, BootstrapSeed)
	p1, p2 := Quantile(99).Of(a), Median([]float64{Quantile(99).Of(a), Quantile(99).Of(b)})
	i1, _ := PercentileInterval(one[0], p1)
	i2, _ := PercentileInterval(two[0], p2)
	if !i1.Contains(p1) || !i2.Contains(p2) {
		t.Errorf("intervals %v %v do not hold their points %v %v", i1, i2, p1, p2)
	}
	if i2[1]-i2[0] < 2*(i1[1]-i1[0]) {
		t.Errorf("two disagreeing repeats give %v, one gives %v: want a much wider interval", i2, i1)
	}
	again := Resample([][]*Sample{{a, b}}, Quantile(99), Resamples, BootstrapSeed)
	if !slices.Equal(two[0], again[0]) {
		t.Error("the same input gave other draws")
	}
}

// TestPairedRatio: the same samples in two groups give a ratio interval
// around 1, and a group twice as slow one around 2.
func TestPairedRatio(t *testing.T) {
	a := expSample(2000, 1, 10)
	dbl := &Sample{Sorted: make([]float64, len(a.Sorted))}
	for i, v := range a.Sorted {
		dbl.Sorted[i] = 2 * v
	}
	d := Resample([][]*Sample{{a}, {a}, {dbl}}, Quantile(99), Resamples, BootstrapSeed)
	same, _ := PercentileInterval(Ratio(d[1], d[0]), 1)
	twice, _ := PercentileInterval(Ratio(d[2], d[0]), 2)
	if !same.Contains(1) || same[0] < 0.7 || same[1] > 1.4 {
		t.Errorf("same samples: ratio interval %v", same)
	}
	if !twice.Contains(2) || twice[0] < 1.4 || twice[1] > 2.9 {
		t.Errorf("doubled: ratio interval %v", twice)
	}
}

// BenchmarkResample measures the intervals of one config: 1000 resamples of
// the p99 over 5 repeats of 26010 requests each (a full log jam config).
func BenchmarkResample(b *testing.B) {
	var g []*Sample
	for r := 0; r < 5; r++ {
		g = append(g, expSample(26010, uint64(r), 10))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Resample([][]*Sample{g}, Quantile(99), Resamples, BootstrapSeed)
	}
}

// TestRankIsHDRs: Percentile on raw values gives what the HDR histograms
// behind every summary give for the same values, so an interval or a plot
// drawn from raw values is the summary's statistic.
func TestRankIsHDRs(t *testing.T) {
	for n := 1; n <= 300; n++ {
		h := hdrhistogram.New(1, 1000, 3)
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i + 1)
			h.RecordValue(int64(i + 1))
		}
		for _, p := range []float64{1, 25, 50, 90, 95, 99, 99.9, 100} {
			if p/100*float64(n) < 0.5 {
				// Rank 0: the histogram answers with a value below every
				// recorded one; Rank keeps to the smallest.
				if got := Percentile(v, p); got != 1 {
					t.Fatalf("n %d: p%v = %v, want the smallest value", n, p, got)
				}
				continue
			}
			if got, want := Percentile(v, p), float64(h.ValueAtQuantile(p)); got != want {
				t.Fatalf("n %d: p%v = %v, the HDR histogram says %v", n, p, got, want)
			}
		}
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("the percentile of nothing is a number")
	}
}
