package agent

// delayQs are the quantiles of the added delay a summary keeps per point
// and block, beside the share of work that waited not at all and the
// maximum: 9 numbers that let many replays' delays merge into one
// distribution.
var delayQs = [...]float64{0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999}

const (
	iP50 = 0
	iP99 = 5
)

// delayKnots summarise a work-weighted distribution of added delay (ms).
type delayKnots struct {
	Zero float32 // share of the work with no delay
	Q    [len(delayQs)]float32
	Max  float32
}

// weighted is a delay distribution and the work (ns) it covers.
type weighted struct {
	k delayKnots
	w float64
}

// cdf is the share of work delayed at most x ms: linear between the knots
// (0, Zero), (Q[j], delayQs[j]) and (Max, 1).
func (k *delayKnots) cdf(x float64) float64 {
	if x >= float64(k.Max) {
		return 1
	}
	px, pc := 0.0, float64(k.Zero)
	for j, q := range delayQs {
		if q <= pc {
			continue
		}
		qx := float64(k.Q[j])
		if x < qx {
			return pc + (q-pc)*(x-px)/(qx-px)
		}
		px, pc = qx, q
	}
	if mx := float64(k.Max); mx > px {
		return pc + (1-pc)*(x-px)/(mx-px)
	}
	return 1
}

// mergeDelay returns the knots of the mixture of ds, each weighing by its
// work: exact for the zero share and the maximum, interpolated between a
// part's knots for the quantiles.
func mergeDelay(ds []weighted) delayKnots {
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
	cdf := func(x float64) float64 {
		acc := 0.0
		for i := range ds {
			if ds[i].w > 0 {
				acc += ds[i].w * ds[i].k.cdf(x)
			}
		}
		return acc / total
	}
	for j, p := range delayQs {
		if zero/total >= p {
			continue
		}
		lo, up := 0.0, hi
		for range 40 {
			mid := (lo + up) / 2
			if cdf(mid) >= p {
				up = mid
			} else {
				lo = mid
			}
		}
		out.Q[j] = float32(up)
	}
	return out
}

// knotsOf makes knots from EvaluateDelays' figures.
func knotsOf(zero float64, qs []float64, maxMs float64) delayKnots {
	k := delayKnots{Zero: float32(zero), Max: float32(maxMs)}
	for j := range k.Q {
		k.Q[j] = float32(qs[j])
	}
	return k
}
