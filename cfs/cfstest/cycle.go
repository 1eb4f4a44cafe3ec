package cfstest

import (
	"math"
	"math/rand/v2"
	"time"
)

// DayCycle is n samples 10 ms apart (8.64 M make a day) of demand with a
// daily cycle and bursts, which Day has not: the level follows the day,
// 0.1 cores at its start (midnight) to 0.6 at noon (a cosine over 24 h);
// at that level a 5 ms request lands in a sample with probability level,
// a trickle of 0.2 x level cores runs beside it, and bursts arrive as a
// Poisson process (0.3/s x level/0.35) with exponential work of 200 ms
// mean, run on up to 2 CPUs as they come (so a burst of 1 s of CPU lasts
// 0.5 s). The mean over a day is about 0.3 cores. Timestamps are jittered
// by up to 1 ms, as a live sampler records; the same for every call (a
// fixed seed). The benchmarks of a day's advice use it beside Day.
func DayCycle(n int) (at, usage []time.Duration) {
	const (
		day     = 24 * time.Hour
		cpus    = 2
		request = 5 * time.Millisecond
	)
	rng := rand.New(rand.NewPCG(3, 4))
	at, usage = make([]time.Duration, n), make([]time.Duration, n)
	var u, backlog time.Duration
	for i := 1; i < n; i++ {
		at[i] = time.Duration(i)*10*time.Millisecond + time.Duration(rng.IntN(1000))*time.Microsecond
		dt := at[i] - at[i-1]
		level := 0.35 - 0.25*math.Cos(2*math.Pi*float64(at[i]%day)/float64(day))
		if rng.Float64() < level {
			backlog += request
		}
		backlog += time.Duration(rng.Float64() * 2 * 0.2 * level * float64(dt))
		if rng.Float64() < 0.3*level/0.35*dt.Seconds() {
			backlog += time.Duration(rng.ExpFloat64() * float64(200*time.Millisecond))
		}
		run := min(backlog, cpus*dt)
		backlog -= run
		u += run
		usage[i] = u
	}
	return at, usage
}
