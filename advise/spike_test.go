package advise

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
)

// steadyWithSpikes is 10 ms samples of use around level (uniform within
// 30% either way, as regular as a server at a fixed rate), except that
// from each of spikes on, for spikeFor, the group used spikeCores.
func steadyWithSpikes(seed uint64, span time.Duration, level, spikeCores float64, spikeFor time.Duration, spikes ...time.Duration) *Demand {
	rng := rand.New(rand.NewPCG(seed, 1))
	const step = 10 * time.Millisecond
	var at, usage []time.Duration
	var u float64
	for k := 0; time.Duration(k)*step <= span; k++ {
		t := time.Duration(k) * step
		if k > 0 {
			c := level * (0.7 + 0.6*rng.Float64())
			for _, s := range spikes {
				if t > s && t <= s+spikeFor {
					c = spikeCores
				}
			}
			u += c * float64(step)
		}
		at, usage = append(at, t), append(usage, time.Duration(u))
	}
	return cfs.FromSamples(at, usage)
}

// TestSingleSpike: 18 s of a steady 0.32 cores (two blocks of 9 s) in
// which the group once ran both CPUs flat out for 100 ms (a GC, say). Its
// block alone misses 5% throttled at the limits near the use, and judging
// it so would size the limit as if the spike came every 9 s. The advice
// names the spike (when, how high, how much CPU above the level), counts
// it once over the window (the recommendation meets the target over the
// whole window with it), judges its block without it, says what meeting
// the target in its block would need, and how long to sample; the window
// stays stationary. Two spikes in the window, or one in every block, are
// demand seen more than once: the blocks judge them as they came.
func TestSingleSpike(t *testing.T) {
	const span = 18 * time.Second
	one := steadyWithSpikes(1, span, 0.32, 2, 100*time.Millisecond, 13500*time.Millisecond)
	a, err := Advise(one, Request{}, Sampled{Source: "one spike"})
	if err != nil {
		t.Fatal(err)
	}
	s, r := a.Spike, a.Recommendation
	if s == nil {
		t.Fatalf("no spike reported: recommended %dm, warnings %q", r.LimitMilli, a.Warnings)
	}
	t.Logf("recommended %dm (%s); its block alone %dm; spike %+v", r.LimitMilli, r.Basis, s.BlockLimitMilli, *s)
	if s.StartSeconds < 13.49 || s.EndSeconds > 13.61 || s.PeakCores < 1.99 || s.PeakCores > 2.01 || s.ExcessCPUSeconds < 0.15 || s.ExcessCPUSeconds > 0.19 {
		t.Errorf("spike %+v: want 13.5-13.6 s at 2 cores, about 0.17 CPU-seconds above the level", *s)
	}
	if !r.Met || s.BlockLimitMilli <= r.LimitMilli {
		t.Errorf("recommended %dm (met %v), its block alone %dm: want the block's limit higher", r.LimitMilli, r.Met, s.BlockLimitMilli)
	}
	// Counted once over the window: the window with the spike meets the
	// target at the recommendation, the block with it does not.
	for _, e := range a.Evaluations {
		if e.LimitMilli == r.LimitMilli && e.BurstMilli == 0 && e.ThrottledRatio > DefaultMaxThrottled {
			t.Errorf("the window throttles %.3f at the recommended %dm", e.ThrottledRatio, r.LimitMilli)
		}
	}
	if b := a.Window.Blocks[1]; !b.Spike || a.Window.Blocks[0].Spike || b.ThrottledRatio <= DefaultMaxThrottled || s.BlockThrottledRatio != b.ThrottledRatio {
		t.Errorf("blocks %+v: want the second marked, throttled over the target at the recommendation", a.Window.Blocks)
	}
	if !a.Window.Stationary {
		t.Errorf("one spike judged non-stationary: %s", a.Window.Nonstationary)
	}
	// Without the spike at all, no more is recommended.
	quiet := steadyWithSpikes(1, span, 0.32, 0, 0)
	q, err := Advise(quiet, Request{}, Sampled{})
	if err != nil {
		t.Fatal(err)
	}
	if q.Spike != nil || q.Recommendation.LimitMilli > r.LimitMilli {
		t.Errorf("without the spike: %dm, spike %+v; with it %dm", q.Recommendation.LimitMilli, q.Spike, r.LimitMilli)
	}
	warned := false
	for _, w := range a.Warnings {
		if strings.HasPrefix(w, "one spike at 13.50-13.60 s (2.00 cores") {
			warned = true
			for _, want := range []string{"throttles its block (9-18 s)", "counts it once over the window", "were it to recur in every block of 9s, set " + formatMilli(s.BlockLimitMilli), "sample for 10m or longer"} {
				if !strings.Contains(w, want) {
					t.Errorf("warning %q: want %q", w, want)
				}
			}
		}
	}
	if !warned {
		t.Errorf("warnings %q: want one naming the spike", a.Warnings)
	}
	if !strings.Contains(r.Basis, "one spike counted once") || !strings.Contains(Answer(a), "its one spike counted once over the window") {
		t.Errorf("basis %q, answer %q: want them to say the spike was counted once", r.Basis, Answer(a))
	}

	// Seen more than once: as before, the blocks judge it.
	for name, d := range map[string]*Demand{
		"two spikes":     steadyWithSpikes(1, span, 0.32, 2, 100*time.Millisecond, 4500*time.Millisecond, 13500*time.Millisecond),
		"in every block": steadyWithSpikes(1, span, 0.32, 2, 100*time.Millisecond, 4500*time.Millisecond, 13500*time.Millisecond, 9200*time.Millisecond),
	} {
		b, err := Advise(d, Request{}, Sampled{})
		if err != nil {
			t.Fatal(err)
		}
		if b.Spike != nil || b.Recommendation.LimitMilli <= r.LimitMilli {
			t.Errorf("%s: recommended %dm, spike %+v: want no spike, and more than one spike's %dm", name, b.Recommendation.LimitMilli, b.Spike, r.LimitMilli)
		}
	}
}

// TestNoSpikeInOrdinaryDemand: demand whose bursts recur (Poisson
// requests, a steady server over a minute, the project's other test
// demands) has no single spike, so the rule never replaces a block.
func TestNoSpikeInOrdinaryDemand(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		for name, d := range map[string]*Demand{
			"requests": requests(seed, 60*time.Second, 20, 5*time.Millisecond, 0, 0),
			"busy":     requests(seed, 30*time.Second, 60, 5*time.Millisecond, 15*time.Second, 0.3),
			"steady":   steadyWithSpikes(seed, 60*time.Second, 0.32, 0, 0),
		} {
			if s, ok := spikeOf(d, 100*time.Millisecond); ok {
				t.Errorf("%s seed %d: spike %+v", name, seed, s)
			}
		}
	}
}
