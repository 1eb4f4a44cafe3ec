package cfs

import "math"

// sampleIx is, for each tick k of a cut (k = 0..n), the index of the first
// sample after it: a 32-bit index every ixSpan ticks and a 16-bit offset
// from it at each tick (2 bytes a tick, not 4: a day at 100 ms is 864 000
// ticks in each of the cuts advise keeps). Samples so dense that ixSpan
// ticks hold more than 65 535 of them (a 100 ms period sampled every 4 us)
// are held as 32-bit indices instead (wide).
type sampleIx struct {
	base []int32
	off  []uint16
	wide []int32 // nil unless an offset did not fit
}

// ixShift is log2 of ixSpan, the ticks one base index serves.
const ixShift = 8

// newSampleIx makes room for n+1 ticks, in base and off when they are long
// enough (storage a cut gave back), else new.
func newSampleIx(n int, base []int32, off []uint16) sampleIx {
	nb := n>>ixShift + 1
	if cap(base) < nb || cap(off) < n+1 {
		base, off = make([]int32, nb), make([]uint16, n+1)
	}
	return sampleIx{base: base[:nb], off: off[:n+1]}
}

// set puts tick k's index i; ticks are set in order from 0, and i never
// falls.
func (x *sampleIx) set(k, i int) {
	if x.wide != nil {
		x.wide[k] = int32(i)
		return
	}
	if k&(1<<ixShift-1) == 0 {
		x.base[k>>ixShift] = int32(i)
	}
	o := i - int(x.base[k>>ixShift])
	if o <= math.MaxUint16 {
		x.off[k] = uint16(o)
		return
	}
	wide := make([]int32, len(x.off))
	for j := range k {
		wide[j] = int32(x.at(j))
	}
	wide[k] = int32(i)
	x.wide = wide
}

// at is tick k's index.
func (x *sampleIx) at(k int) int {
	if x.wide != nil {
		return int(x.wide[k])
	}
	return int(x.base[k>>ixShift]) + int(x.off[k])
}
