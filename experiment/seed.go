package experiment

import "github.com/throttlelab/throttlelab/loadgen"

// RepeatSeed is the seed of repeat rep (counting from 1) of an experiment
// whose spec seed is seed. Repeat 1 uses the spec's seed itself, so a
// one-repeat experiment gives what it always gave; every later repeat gets
// an independent seed, a SplitMix64 step of the spec seed and the repeat, so
// repeats sample the workload's own randomness (arrivals, tile order,
// balancer picks) and not only the machine's noise. All configs and loads of
// one repeat share its seed (common random numbers): a difference between
// configs within a repeat is the configs', not the draw's.
func RepeatSeed(seed uint64, rep int) uint64 {
	if rep <= 1 {
		return seed
	}
	z := seed + uint64(rep)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	if z == 0 {
		z = 1
	}
	return z
}

// Seed is the run's seed: its repeat's (see RepeatSeed).
func (e *Experiment) Seed(r Run) uint64 { return RepeatSeed(e.Spec.Seed, r.Repeat) }

// RunLoadConfig is LoadConfig for one run: its load, seeded with the run's
// repeat seed. Backends drive a run's load with it.
func (e *Experiment) RunLoadConfig(r Run) loadgen.Config {
	c := e.LoadConfig(r.Load)
	c.Seed = e.Seed(r)
	return c
}
