package agent

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/testenv"
)

// TestByNeedAgreesOnThreadsOnOff holds sampling by need to the 10 ms
// design (agreesByNeed) on seeded random on/off demand of several threads
// (threadsOnOff), with the default hot settings and eager ones.
func TestByNeedAgreesOnThreadsOnOff(t *testing.T) {
	testenv.Arithmetic(t)
	const n = 10*60*100 + 1
	def := HotConfig{}
	def.defaults()
	eager := HotConfig{Margin: 0.05, Hold: 10 * time.Second}
	eager.defaults()
	for seed := uint64(1); seed <= 4; seed++ {
		usage := threadsOnOff(seed, n)
		for _, h := range []HotConfig{def, eager} {
			t.Run(fmt.Sprintf("seed=%d/margin=%.2f,hold=%s", seed, h.Margin, h.Hold), func(t *testing.T) { agreesByNeed(t, &h, usage, nil) })
		}
	}
}

// threadsOnOff is n samples of seeded random on/off demand: off spells of
// 0.2 to 20 s with a trickle (up to 3% of a core), on spells of 20 ms to
// 2 s in which 1 to 3 threads each run a random share (its duty, 30-100%,
// jittered per step) of every 10 ms step. Unlike bursty's, its bursts use
// several CPUs at once and last from one step to many periods.
func threadsOnOff(seed uint64, n int) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, 38))
	out := make([]time.Duration, n)
	on, left, threads, duty := false, 0, 0, 0.0
	for i := 1; i < n; i++ {
		if left == 0 {
			on = !on
			if on {
				left, threads, duty = 2+rng.IntN(199), 1+rng.IntN(3), 0.3+0.7*rng.Float64()
			} else {
				left = 20 + rng.IntN(1981)
			}
		}
		left--
		step := time.Duration(rng.IntN(300)) * time.Microsecond
		if on {
			for range threads {
				step += time.Duration(float64(10*time.Millisecond) * min(1, duty*(0.75+0.5*rng.Float64())))
			}
		}
		out[i] = out[i-1] + step
	}
	return out
}
