package agent

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bisectMerge is the reference: each quantile of the mixture found by
// bisecting its cdf (what mergeDelay computed before its sweep).
func bisectMerge(ds []weighted) delayKnots {
	var total, hi, zero float64
	for _, d := range ds {
		if d.w > 0 {
			total += d.w
			hi = max(hi, float64(d.k.Max))
			zero += d.w * float64(d.k.Zero)
		}
	}
	if total <= 0 || hi <= 0 {
		return delayKnots{Zero: 1}
	}
	out := delayKnots{Zero: float32(zero / total), Max: float32(hi)}
	for j, p := range delayQs {
		if zero/total >= p {
			continue
		}
		lo, up := 0.0, hi
		for range 60 {
			mid := (lo + up) / 2
			acc := 0.0
			for i := range ds {
				if ds[i].w > 0 {
					acc += ds[i].w * ds[i].k.cdf(mid)
				}
			}
			if acc/total >= p {
				up = mid
			} else {
				lo = mid
			}
		}
		out.Q[j] = float32(up)
	}
	return out
}

// TestMergeDelayAgreesWithBisection: the sweep finds the mixture's
// quantiles where bisecting its cdf does, on random parts: zero shares
// from none to all, repeated knots (jumps), knots past the maximum, parts
// without delay.
func TestMergeDelayAgreesWithBisection(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for c := 0; c < 3000; c++ {
		var ds []weighted
		for range 1 + rng.IntN(30) {
			var k delayKnots
			switch rng.IntN(6) {
			case 0:
				k = delayKnots{Zero: 1}
			case 1:
				k.Zero = float32(rng.Float64())
			default:
				k.Zero = float32(rng.Float64() * rng.Float64())
			}
			x := 0.0
			for j := range k.Q {
				if rng.IntN(4) > 0 { // else a repeated knot: a jump
					x += rng.ExpFloat64() * math.Pow(10, float64(rng.IntN(4)-1))
				}
				k.Q[j] = float32(x)
			}
			k.Max = k.Q[len(k.Q)-1] * float32(1+rng.Float64())
			if rng.IntN(8) == 0 {
				k.Max = k.Q[rng.IntN(len(k.Q))] // a knot at or past the maximum
			}
			if k.Zero >= 1 {
				k = delayKnots{Zero: 1}
			}
			w := rng.ExpFloat64()
			if rng.IntN(10) == 0 {
				w = 0
			}
			ds = append(ds, weighted{k, w})
		}
		got, want := mergeDelay(ds), bisectMerge(ds)
		if got.Zero != want.Zero || got.Max != want.Max {
			t.Fatalf("case %d: zero/max %v/%v, want %v/%v", c, got.Zero, got.Max, want.Zero, want.Max)
		}
		for j := range got.Q {
			if d := math.Abs(float64(got.Q[j]) - float64(want.Q[j])); d > 1e-5*float64(want.Max)+1e-9 {
				t.Fatalf("case %d: q%.3f %v, want %v (parts %+v)", c, delayQs[j], got.Q[j], want.Q[j], ds)
			}
		}
	}
}

// TestPackedKnotsRoundTrip: a block's packed delays read back within
// 0.035% (half a step of 1/1024 octave) from 1 us to a day, 0 stays 0,
// order is kept, and the zero share within 1/65535.
func TestPackedKnotsRoundTrip(t *testing.T) {
	prev := uint16(0)
	for ms := 0.001; ms < 86_400_000; ms *= 1.0007 {
		c := packMs(float32(ms))
		if c < prev {
			t.Fatalf("%.6g ms packs to %d, below %d for a smaller delay", ms, c, prev)
		}
		prev = c
		if got := float64(unpackMs(c)); math.Abs(got-ms)/ms > 0.00035 {
			t.Fatalf("%.6g ms reads back as %.6g", ms, got)
		}
	}
	if packMs(0) != 0 || unpackMs(0) != 0 {
		t.Error("no delay does not stay 0")
	}
	k := delayKnots{Zero: 0.37, Max: 812.5}
	for j := range k.Q {
		k.Q[j] = float32(j+1) * 50
	}
	got := k.pack().unpack()
	if math.Abs(float64(got.Zero-k.Zero)) > 1.0/65535 || math.Abs(float64(got.Max-k.Max)) > 812.5*0.00035 {
		t.Errorf("knots %+v read back as %+v", k, got)
	}
}
