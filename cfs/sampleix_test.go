package cfs

import (
	"math/rand/v2"
	"testing"
)

// TestSampleIxHoldsEveryIndex: the 16-bit offsets give back every index
// set, across their 32-bit bases, and indices too far apart for 16 bits
// (samples far denser than the period) turn the whole table wide without
// losing the ones set before.
func TestSampleIxHoldsEveryIndex(t *testing.T) {
	for _, c := range []struct {
		name     string
		maxStep  int
		wantWide bool
	}{{"10 per tick", 20, false}, {"dense", 2000, true}} {
		rng := rand.New(rand.NewPCG(3, 4))
		n := 5000
		want := make([]int, n+1)
		x := newSampleIx(n, nil, nil)
		i := 0
		for k := range want {
			i += rng.IntN(c.maxStep)
			want[k] = i
			x.set(k, i)
		}
		for k, w := range want {
			if got := x.at(k); got != w {
				t.Fatalf("%s: tick %d: index %d, set %d", c.name, k, got, w)
			}
		}
		if (x.wide != nil) != c.wantWide {
			t.Errorf("%s: wide %v, want %v", c.name, x.wide != nil, c.wantWide)
		}
	}
}
