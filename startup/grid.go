package startup

import "time"

// FromSamples puts cumulative CPU use sampled at times at (both as the
// kernel's counters give them, from any origin) on a grid of step from
// time from: each interval's use spread evenly over it, then run as it
// would with no limit, at most cores CPUs at once (RunUnlimited; cores 0
// or less: no bound). Samples before from are left out.
func FromSamples(at, usage []time.Duration, from, step time.Duration, cores float64) Profile {
	p := Profile{Step: step}
	if len(at) < 2 || step <= 0 {
		return p
	}
	end := at[len(at)-1] - from
	if end <= 0 {
		return p
	}
	p.Cores = make([]float64, (end+step-1)/step)
	for i := 1; i < len(at); i++ {
		t0, t1 := at[i-1]-from, at[i]-from
		if t1 <= 0 || t1 <= t0 {
			continue
		}
		t0 = max(t0, 0)
		rate := float64(usage[i]-usage[i-1]) / float64(at[i]-at[i-1]) // cores
		for k := int(t0 / step); k < len(p.Cores) && time.Duration(k)*step < t1; k++ {
			lo, hi := max(t0, time.Duration(k)*step), min(t1, time.Duration(k+1)*step)
			p.Cores[k] += rate * float64(hi-lo) / float64(step)
		}
	}
	p.Cores = RunUnlimited(p.Cores, cores)
	return p
}

// RunUnlimited is how demand on a grid runs with no limit: at most cores
// CPUs at once (the demand's parallelism bound), the rest carried on.
// Work a reconstruction moved to a throttling streak's start arrives
// faster than the group can run it: a second of work in one 10 ms sample
// runs over the following samples, not in it. cores 0 or less: no bound.
func RunUnlimited(in []float64, cores float64) []float64 {
	if cores <= 0 {
		return in
	}
	carry := 0.0
	for k := 0; k < len(in) || carry > 1e-9; k++ {
		if k == len(in) {
			in = append(in, 0)
		}
		want := in[k] + carry
		run := min(want, cores)
		in[k], carry = run, want-run
	}
	return in
}
