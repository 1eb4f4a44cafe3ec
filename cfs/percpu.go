package cfs

import "time"

// cpuShare is the least share of a window's CPU time a CPU must have run
// to count among the CPUs a group ran on: a thread that visited a CPU for a
// moment (a migration, a wake-up on the other CPU) does not make it
// parallel.
const cpuShare = 0.02

// CPUsUsed is how many CPUs the group ran on over the samples (each with
// at least 2% of its CPU time), from the per-CPU split; 0 when the samples
// carry none.
func (d *Demand) CPUsUsed() int {
	if len(d.PerCPU) == 0 || len(d.At) < 2 {
		return 0
	}
	var total time.Duration
	work := make([]time.Duration, len(d.PerCPU))
	for c, u := range d.PerCPU {
		work[c] = max(0, u[len(u)-1]-u[0])
		total += work[c]
	}
	n := 0
	for _, w := range work {
		if total > 0 && float64(w) >= cpuShare*float64(total) {
			n++
		}
	}
	return n
}

// CPUsAtOnce is the most CPUs the group ran on within one sample interval
// (each for at least a tenth of it), from the per-CPU split; 0 when the
// samples carry none.
func (d *Demand) CPUsAtOnce() int {
	best := 0
	for i := 1; i < len(d.At) && len(d.PerCPU) > 0; i++ {
		dt := d.At[i] - d.At[i-1]
		n := 0
		for _, u := range d.PerCPU {
			if u[i]-u[i-1] >= dt/10 {
				n++
			}
		}
		best = max(best, n)
	}
	return best
}

// Split is each sample interval's split of the use over the CPUs the
// group ran on: share[i*N+c] of interval i (ending at sample i) ran on CPU
// cpus[c]. An interval whose per-CPU counts show nothing (the files are
// read a moment apart from the usage) takes the window's split.
type Split struct {
	// N is how many CPUs the group ran on (CPUsUsed).
	N     int
	share []float64
}

// Split returns d's per-CPU split over its CPUs, or nil when it has none or
// ran on one CPU.
func (d *Demand) Split() *Split {
	if d.CPUsUsed() < 2 {
		return nil
	}
	var cpus []int
	var total time.Duration
	for _, u := range d.PerCPU {
		total += max(0, u[len(u)-1]-u[0])
	}
	whole := make([]float64, 0, len(d.PerCPU))
	for c, u := range d.PerCPU {
		w := max(0, u[len(u)-1]-u[0])
		if float64(w) >= cpuShare*float64(total) {
			cpus = append(cpus, c)
			whole = append(whole, float64(w))
		}
	}
	sum := 0.0
	for _, w := range whole {
		sum += w
	}
	for k := range whole {
		whole[k] /= sum
	}
	n := len(cpus)
	s := &Split{N: n, share: make([]float64, len(d.At)*n)}
	copy(s.share, whole) // interval 0 does not exist; keep it valid
	for i := 1; i < len(d.At); i++ {
		row := s.share[i*n : (i+1)*n]
		sum := 0.0
		for k, c := range cpus {
			row[k] = float64(max(0, d.PerCPU[c][i]-d.PerCPU[c][i-1]))
			sum += row[k]
		}
		if sum <= 0 {
			copy(row, whole)
			continue
		}
		for k := range row {
			row[k] /= sum
		}
	}
	return s
}
