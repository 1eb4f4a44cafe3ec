package agent

import (
	"cmp"
	"math"
	"slices"
)

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
// part's knots for the quantiles (each part's cdf). The mixture's cdf is
// linear between the parts' knots, so one sweep over them in order finds
// every quantile where it is reached.
func mergeDelay(ds []weighted) delayKnots {
	var total, hi, zero float64
	n := 0
	for _, d := range ds {
		if d.w > 0 {
			total += d.w
			hi = max(hi, float64(d.k.Max))
			zero += d.w * float64(d.k.Zero)
			n++
		}
	}
	if total <= 0 || hi <= 0 {
		return delayKnots{Zero: 1}
	}
	out := delayKnots{Zero: float32(zero / total), Max: float32(hi)}
	// Where the mixture's cdf bends (each part's slope starts or stops) or
	// jumps, in work (ns) per ms and work.
	evs := make([]cdfEvent, 0, n*2*(len(delayQs)+1))
	for _, d := range ds {
		if d.w > 0 {
			evs = d.k.events(d.w, evs)
		}
	}
	slices.SortFunc(evs, func(a, b cdfEvent) int { return cmp.Compare(a.x, b.x) })
	// v is the mixture's cdf (times total) at x, slope its rate after x.
	x, v, slope := 0.0, zero, 0.0
	j, e := 0, 0
	for j < len(delayQs) && zero/total >= delayQs[j] {
		j++ // no delay for this share: Q stays 0
	}
	for j < len(delayQs) && e < len(evs) {
		nx := evs[e].x
		// the line from x to nx
		for j < len(delayQs) && slope > 0 && v+slope*(nx-x) >= delayQs[j]*total {
			out.Q[j] = float32(min(x+(delayQs[j]*total-v)/slope, nx))
			j++
		}
		v += slope * (nx - x)
		x = nx
		for ; e < len(evs) && evs[e].x == x; e++ {
			slope += evs[e].slope
			v += evs[e].jump
		}
		for j < len(delayQs) && v >= delayQs[j]*total {
			out.Q[j] = float32(x)
			j++
		}
	}
	for ; j < len(delayQs); j++ {
		out.Q[j] = float32(hi) // not reached for rounding: the top
	}
	return out
}

// cdfEvent is where one part's cdf bends or jumps.
type cdfEvent struct {
	x, slope, jump float64
}

// events appends where k's cdf (as cdf reads it), weighing w, bends and
// jumps past its zero share at 0.
func (k *delayKnots) events(w float64, evs []cdfEvent) []cdfEvent {
	mx := float64(k.Max)
	if mx <= 0 {
		return append(evs, cdfEvent{x: 0, jump: w * (1 - float64(k.Zero))}) // all of it at 0
	}
	px, pc := 0.0, float64(k.Zero)
	seg := func(qx, q float64) {
		if qx > px {
			s := w * (q - pc) / (qx - px)
			evs = append(evs, cdfEvent{x: px, slope: s}, cdfEvent{x: qx, slope: -s})
		} else {
			evs = append(evs, cdfEvent{x: px, jump: w * (q - pc)})
		}
	}
	for j, q := range delayQs {
		if q <= pc {
			continue
		}
		qx := float64(k.Q[j])
		if qx >= mx {
			// cdf heads for this knot and is 1 from the maximum on
			s := w * (q - pc) / (qx - px)
			return append(evs, cdfEvent{x: px, slope: s}, cdfEvent{x: mx, slope: -s, jump: w * (1 - pc - (q-pc)*(mx-px)/(qx-px))})
		}
		seg(max(qx, px), q)
		px, pc = max(qx, px), q
	}
	seg(mx, 1)
	return evs
}

// knotsOf makes knots from a replay's delay figures (advise.Options.Delays).
func knotsOf(zero float64, qs []float64, maxMs float64) delayKnots {
	k := delayKnots{Zero: float32(zero), Max: float32(maxMs)}
	for j := range k.Q {
		k.Q[j] = float32(qs[j])
	}
	return k
}

// packedKnots are delayKnots as a block keeps them, in 20 bytes where they
// take 40: the zero share in 65535ths, each delay on a log scale of 1/1024
// of an octave (0.07% apart) from 2^-12 ms (0.24 us, under advise's 1 us
// resolution) to 2^52 ms, 0 for none. A day of blocks is most of the
// agent's memory (BenchmarkAgentDay200), and their delays are read as
// quantiles to 0.1 ms of delays that are model predictions.
type packedKnots struct {
	Zero uint16
	Q    [len(delayQs)]uint16
	Max  uint16
}

func packMs(ms float32) uint16 {
	if !(ms > 0) {
		return 0
	}
	return uint16(min(max(math.Round((math.Log2(float64(ms))+12)*1024), 1), math.MaxUint16))
}

func unpackMs(c uint16) float32 {
	if c == 0 {
		return 0
	}
	return float32(math.Exp2(float64(c)/1024 - 12))
}

func (k delayKnots) pack() packedKnots {
	p := packedKnots{Zero: uint16(math.Round(float64(min(max(k.Zero, 0), 1)) * math.MaxUint16)), Max: packMs(k.Max)}
	for j, q := range k.Q {
		p.Q[j] = packMs(q)
	}
	return p
}

func (p packedKnots) unpack() delayKnots {
	k := delayKnots{Zero: float32(p.Zero) / math.MaxUint16, Max: unpackMs(p.Max)}
	for j, q := range p.Q {
		k.Q[j] = unpackMs(q)
	}
	return k
}
