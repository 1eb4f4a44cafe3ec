package workload

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// KernelCalibration converts escape-time iterations into CPU time on this machine.
type KernelCalibration struct {
	// NsPerIteration is the CPU time of one escape-time iteration.
	NsPerIteration float64 `json:"ns_per_iteration"`
}

// Duration returns the CPU time n iterations take.
func (k KernelCalibration) Duration(n uint64) time.Duration {
	return time.Duration(float64(n) * k.NsPerIteration)
}

// CalibrateKernel measures the Mandelbrot kernel on the calling thread: rounds runs
// of pixels points inside the set (each costs MaxIter iterations), timed with the
// thread's CPU clock; the median is taken.
func CalibrateKernel(pixels, rounds int) (KernelCalibration, error) {
	if pixels < 1 || rounds < 1 {
		return KernelCalibration{}, errors.New("calibration needs pixels >= 1 and rounds >= 1")
	}
	ns := make([]float64, 0, rounds)
	for r := 0; r < rounds; r++ {
		var total uint64
		cpu := OnThread(func() {
			for i := 0; i < pixels; i++ {
				// Points near the centre of the main cardioid: all run to MaxIter.
				total += uint64(Escape(-0.1+float64(i%7)*1e-3, 0.05))
			}
		})
		if cpu <= 0 {
			return KernelCalibration{}, fmt.Errorf("thread CPU clock did not advance over %d pixels", pixels)
		}
		ns = append(ns, float64(cpu)/float64(total))
	}
	slices.Sort(ns)
	return KernelCalibration{NsPerIteration: ns[len(ns)/2]}, nil
}

// Class is a cost class of tiles, so experiments can pick subsets by cost.
type Class string

// Cost classes, by iteration count (machine-independent); what a class
// takes in time is its iterations at the machine's cost per iteration
// (docs/simulator.md gives the reference machine's).
const (
	ClassSmall  Class = "small"
	ClassMedium Class = "medium"
	ClassLarge  Class = "large"
)

// Class boundaries in iterations per tile.
const (
	SmallMaxIterations = 3_600_000  // below: small
	LargeMinIterations = 90_000_000 // at or above: large (half the maximum tile cost)
)

// ClassOf returns the cost class of a tile with n iterations.
func ClassOf(n uint64) Class {
	switch {
	case n < SmallMaxIterations:
		return ClassSmall
	case n >= LargeMinIterations:
		return ClassLarge
	default:
		return ClassMedium
	}
}

// ParseClass checks a class name.
func ParseClass(s string) (Class, error) {
	switch c := Class(s); c {
	case ClassSmall, ClassMedium, ClassLarge:
		return c, nil
	}
	return "", fmt.Errorf("tile class %q: want small, medium or large", s)
}

// TilesOfClass returns the catalogue's tiles of class c in row-major order.
func (c *Catalog) TilesOfClass(cl Class) []TileInfo {
	var out []TileInfo
	for _, t := range c.Tiles {
		if ClassOf(t.Iterations) == cl {
			out = append(out, t)
		}
	}
	return out
}

// CostStats summarises the cost distribution of a catalogue.
type CostStats struct {
	Tiles           int               `json:"tiles"`
	TotalIterations uint64            `json:"total_iterations"`
	Percentiles     map[string]uint64 `json:"percentile_iterations"`
	Classes         map[Class]int     `json:"classes"`
	ClassIterations map[Class]uint64  `json:"class_iterations"`
	Histogram       []HistogramBin    `json:"histogram"`
}

// HistogramBin counts tiles whose cost lies in [Lo, Hi) iterations.
type HistogramBin struct {
	Lo    uint64 `json:"lo"`
	Hi    uint64 `json:"hi"`
	Count int    `json:"count"`
}

// Stats computes the cost distribution: percentiles, classes and a histogram with
// bins that double in width (the costs span five orders of magnitude).
func (c *Catalog) Stats() CostStats {
	costs := make([]uint64, len(c.Tiles))
	s := CostStats{Tiles: len(c.Tiles), Classes: map[Class]int{}, ClassIterations: map[Class]uint64{}, Percentiles: map[string]uint64{}}
	for i, t := range c.Tiles {
		costs[i] = t.Iterations
		s.TotalIterations += t.Iterations
		cl := ClassOf(t.Iterations)
		s.Classes[cl]++
		s.ClassIterations[cl] += t.Iterations
	}
	slices.Sort(costs)
	for _, p := range []float64{0, 10, 25, 50, 75, 90, 99, 100} {
		i := int(math.Round(p / 100 * float64(len(costs)-1)))
		s.Percentiles[fmt.Sprintf("p%g", p)] = costs[i]
	}
	// Bins [2^k, 2^(k+1)) from the cheapest tile's power of two up to the maximum.
	lo := uint64(1) << (63 - leadingZeros(max(costs[0], 1)))
	for b := lo; b <= costs[len(costs)-1]; b *= 2 {
		bin := HistogramBin{Lo: b, Hi: b * 2}
		i, _ := slices.BinarySearch(costs, bin.Lo)
		j, _ := slices.BinarySearch(costs, bin.Hi)
		bin.Count = j - i
		s.Histogram = append(s.Histogram, bin)
	}
	return s
}

func leadingZeros(v uint64) int {
	n := 0
	for v&(1<<63) == 0 {
		v <<= 1
		n++
	}
	return n
}
