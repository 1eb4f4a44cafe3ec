package loadgen

import (
	"math"
	"testing"
	"time"
)

func TestConstantArrivals(t *testing.T) {
	a, err := NewConstant(200)
	if err != nil {
		t.Fatal(err)
	}
	// N requests fall exactly in N/rate seconds: request i at i * 5 ms.
	const n = 1000
	var last time.Duration
	for i := 0; i < n; i++ {
		last = a.Next()
		if want := time.Duration(i) * 5 * time.Millisecond; last != want {
			t.Fatalf("request %d due at %s, want %s", i, last, want)
		}
	}
	if last >= time.Duration(n)*time.Second/200 {
		t.Errorf("the %d-th request is due at %s, outside %d/200 s", n, last, n)
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := NewConstant(bad); err == nil {
			t.Errorf("rate %g accepted", bad)
		}
	}
}

func TestPoissonArrivals(t *testing.T) {
	const rate, n = 500.0, 200000
	a, err := NewPoisson(rate, 42)
	if err != nil {
		t.Fatal(err)
	}
	prev := a.Next()
	if prev != 0 {
		t.Fatalf("first request due at %s, want 0", prev)
	}
	var sum, sumSq float64
	for i := 0; i < n; i++ {
		next := a.Next()
		gap := (next - prev).Seconds()
		if gap < 0 {
			t.Fatal("arrivals went backwards")
		}
		sum += gap
		sumSq += gap * gap
		prev = next
	}
	mean := sum / n
	variance := sumSq/n - mean*mean
	// Exponential gaps: mean 1/rate, variance 1/rate^2. With 200000 gaps the
	// standard error of the mean is 0.2%: 2% bounds cannot fail by chance.
	if math.Abs(mean*rate-1) > 0.02 || math.Abs(variance*rate*rate-1) > 0.05 {
		t.Errorf("gaps mean %.4g var %.4g, want %.4g and %.4g", mean, variance, 1/rate, 1/(rate*rate))
	}
	// The count in fixed windows is Poisson too: variance equals mean.
	b, _ := NewPoisson(rate, 7)
	counts := make([]float64, 1000) // 1000 windows of 0.1 s, mean 50 each
	for {
		d := b.Next()
		w := int(d / (100 * time.Millisecond))
		if w >= len(counts) {
			break
		}
		counts[w]++
	}
	var cm, cv float64
	for _, c := range counts {
		cm += c
	}
	cm /= float64(len(counts))
	for _, c := range counts {
		cv += (c - cm) * (c - cm)
	}
	cv /= float64(len(counts) - 1)
	if math.Abs(cm/50-1) > 0.03 || math.Abs(cv/cm-1) > 0.15 {
		t.Errorf("counts per 100 ms window: mean %.2f variance %.2f, want both near 50", cm, cv)
	}
	// Same seed, same schedule.
	c1, _ := NewPoisson(rate, 9)
	c2, _ := NewPoisson(rate, 9)
	for i := 0; i < 100; i++ {
		if c1.Next() != c2.Next() {
			t.Fatal("same seed gave different schedules")
		}
	}
}
