package advise

import (
	"math/rand/v2"
	"testing"
	"time"
)

// twoCPU is 10 s of 10 ms samples: CPU 0 busy throughout, CPU 1 busy at
// half a CPU for the first 20 ms of every 100 ms (110 ms of work a period).
func twoCPU() *Demand {
	d := &Demand{PerCPU: make([][]time.Duration, 2)}
	var u, c0, c1 time.Duration
	for i := 0; i <= 1000; i++ {
		if i > 0 {
			c0 += 10 * time.Millisecond
			if (i-1)%10 < 2 {
				c1 += 5 * time.Millisecond
			}
			u = c0 + c1
		}
		d.At = append(d.At, time.Duration(i)*10*time.Millisecond)
		d.Usage = append(d.Usage, u)
		d.PerCPU[0] = append(d.PerCPU[0], c0)
		d.PerCPU[1] = append(d.PerCPU[1], c1)
	}
	return d
}

// randTwo is 30 s of 10 ms samples on two CPUs, each CPU using 0, 3, 7 or
// 10 ms of each interval at random (seeded): a mean of 1 core.
func randTwo() *Demand {
	r := rand.New(rand.NewPCG(1, 2))
	d := &Demand{PerCPU: make([][]time.Duration, 2)}
	var c [2]time.Duration
	steps := []time.Duration{0, 3, 7, 10}
	for i := 0; i <= 3000; i++ {
		if i > 0 {
			for k := range c {
				c[k] += steps[r.IntN(4)] * time.Millisecond
			}
		}
		d.At = append(d.At, time.Duration(i)*10*time.Millisecond)
		d.Usage = append(d.Usage, c[0]+c[1])
		d.PerCPU[0] = append(d.PerCPU[0], c[0])
		d.PerCPU[1] = append(d.PerCPU[1], c[1])
	}
	return d
}

// TestSliceReplay: the per-CPU slice replay holds runtime on the CPUs, so
// it throttles no less than the fluid replay of the same use (within a
// hundredth: held runtime also carries over a period's end), throttles
// nothing where the quota covers the busiest period plus a slice per CPU,
// and a group on one CPU gets no split (the fluid replay is exact there).
func TestSliceReplay(t *testing.T) {
	d := twoCPU()
	if n := d.CPUsUsed(); n != 2 {
		t.Fatalf("CPUsUsed = %d, want 2", n)
	}
	if n := d.CPUsAtOnce(); n != 2 {
		t.Fatalf("CPUsAtOnce = %d, want 2", n)
	}
	r := randTwo()
	var points []Point
	for l := int64(1000); l <= 1400; l += 50 {
		points = append(points, Point{LimitMilli: l, Period: 100 * time.Millisecond})
	}
	points = append(points, Point{LimitMilli: 2100, Period: 100 * time.Millisecond})
	es, err := Evaluate(r, points, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ef, err := Evaluate(&Demand{At: r.At, Usage: r.Usage, Cores: 2}, points, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range points {
		t.Logf("%s: slices %.3f, fluid %.3f", p, es[i].ThrottledRatio, ef[i].ThrottledRatio)
		if es[i].ThrottledRatio < ef[i].ThrottledRatio-0.01 {
			t.Errorf("%s: the slice replay throttles %.3f, less than the fluid %.3f", p, es[i].ThrottledRatio, ef[i].ThrottledRatio)
		}
	}
	if last := es[len(es)-1]; last.ThrottledRatio != 0 {
		t.Errorf("2100m (2 CPUs + a slice each): throttled %.3f, want 0", last.ThrottledRatio)
	}
	if es[0].ThrottledRatio < 0.5 {
		t.Errorf("1000m, the mean use: throttled %.3f, want most periods", es[0].ThrottledRatio)
	}
	one := &Demand{At: d.At, Usage: d.Usage, PerCPU: [][]time.Duration{d.Usage, make([]time.Duration, len(d.At))}}
	if one.Split() != nil {
		t.Fatal("a group on one CPU got a per-CPU split")
	}
}
