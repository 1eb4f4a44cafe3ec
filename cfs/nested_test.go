package cfs

import (
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// nestedOnce replays ds under s (100 ms period, phase 0) with histograms.
func nestedOnce(t *testing.T, ds []*Demand, pod time.Duration, quotas []time.Duration, cores []float64) NestedResult {
	t.Helper()
	hists := make([]*DelayHist, len(ds))
	for i := range hists {
		hists[i] = new(DelayHist)
	}
	r, err := ReplayNested(ds, NestedSetting{Period: 100 * time.Millisecond, Pod: pod, Quotas: quotas, Cores: cores}, hists)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func nearMs(got, wantMs float64) bool { return math.Abs(got/1e6-wantMs) <= 0.04*wantMs+0.01 }

// TestNestedPodBinds: two containers, each one core for 40 ms from 1.00 s
// (after a trickle at the start), each under its own loose 50 ms quota,
// inside a pod quota of 60 ms. Together they use 2 cores, so the pod's pool
// runs dry at 1.03 s; each has 10 ms waiting, served from the refill at
// 1.10 to 1.11 on its own CPU: delays of 70 ms, the pod's period to 1.10
// throttled, neither container's own.
func TestNestedPodBinds(t *testing.T) {
	ms := time.Millisecond
	a := demandOf(3*time.Second, between(1, time.Second, 1040*ms))
	b := demandOf(3*time.Second, between(1, time.Second, 1040*ms))
	r := nestedOnce(t, []*Demand{a, b}, 60*ms, []time.Duration{50 * ms, 50 * ms}, []float64{1, 1})
	if r.Pod.Stat.ThrottledPeriods != 1 {
		t.Errorf("pod: %d of %d periods throttled, want 1", r.Pod.Stat.ThrottledPeriods, r.Pod.Stat.Periods)
	}
	// 1.03 to 1.10 on each container's CPU.
	if !nearMs(r.Pod.ThrottledNs, 140) {
		t.Errorf("pod throttled %.1f ms, want 140", r.Pod.ThrottledNs/1e6)
	}
	for i, c := range r.Containers {
		if c.Stat.ThrottledPeriods != 0 || c.ThrottledNs != 0 {
			t.Errorf("container %d: own pool throttled %d periods, %.1f ms; want none", i, c.Stat.ThrottledPeriods, c.ThrottledNs/1e6)
		}
		if !nearMs(r.PodThrottledNs[i], 70) {
			t.Errorf("container %d: waited %.1f ms for the pod's pool, want 70", i, r.PodThrottledNs[i]/1e6)
		}
		// 10 of its 41 ms of work waited 70 ms.
		if !nearMs(c.Hist.Quantile(0.99), 70) || c.Hist.Quantile(0.5) != 0 || !nearMs(c.Hist.Max(), 70) {
			t.Errorf("container %d: delay p50 %.1f p99 %.1f max %.1f ms; want 0, 70, 70", i, c.Hist.Quantile(0.5)/1e6, c.Hist.Quantile(0.99)/1e6, c.Hist.Max()/1e6)
		}
	}
	// Without the pod's quota nothing waits.
	r = nestedOnce(t, []*Demand{a, b}, 0, []time.Duration{50 * ms, 50 * ms}, []float64{1, 1})
	if r.Pod.Stat.Periods != 0 || r.Containers[0].Stat.ThrottledPeriods != 0 || r.Containers[0].Hist.Max() != 0 {
		t.Errorf("no pod quota: pod %d periods, container throttled %d, max delay %.1f ms; want 0, 0, 0", r.Pod.Stat.Periods, r.Containers[0].Stat.ThrottledPeriods, r.Containers[0].Hist.Max()/1e6)
	}
	// A container without a limit has only the pod's pool: the same.
	r = nestedOnce(t, []*Demand{a, b}, 60*ms, []time.Duration{0, 50 * ms}, []float64{1, 1})
	if r.Pod.Stat.ThrottledPeriods != 1 || r.Containers[0].Stat.Periods != 0 || !nearMs(r.PodThrottledNs[0], 70) {
		t.Errorf("container 0 unlimited: pod throttled %d, container periods %d, waited %.1f ms for the pod; want 1, 0, 70",
			r.Pod.Stat.ThrottledPeriods, r.Containers[0].Stat.Periods, r.PodThrottledNs[0]/1e6)
	}
}

// TestNestedPodEqualsSum: two containers saturated at one core for 1 s,
// quotas 30 ms and 20 ms inside a pod quota of 50 ms, their sum. Each runs
// its own quota per period and waits the rest (70 and 80 ms a period, ten
// periods); the pod's pool runs dry at the instant the first container's
// own does, with no container left wanting it, so the pod is never
// throttled: the containers' own quotas bind.
func TestNestedPodEqualsSum(t *testing.T) {
	ms := time.Millisecond
	a := demandOf(time.Second, constant(1))
	b := demandOf(time.Second, constant(1))
	r := nestedOnce(t, []*Demand{a, b}, 50*ms, []time.Duration{30 * ms, 20 * ms}, []float64{1, 1})
	if r.Pod.Stat.ThrottledPeriods != 0 || r.Pod.ThrottledNs != 0 {
		t.Errorf("pod: %d periods throttled, %.1f ms; want none", r.Pod.Stat.ThrottledPeriods, r.Pod.ThrottledNs/1e6)
	}
	for i, want := range []float64{700, 800} {
		c := r.Containers[i]
		if c.Stat.ThrottledPeriods != 10 || c.Stat.Periods != 11 || !nearMs(c.ThrottledNs, want) {
			t.Errorf("container %d: %d of %d periods throttled, %.1f ms; want 10 of 11, %.0f ms", i, c.Stat.ThrottledPeriods, c.Stat.Periods, c.ThrottledNs/1e6, want)
		}
	}
	// One quota of 50 ms over both with no own limits: the pod binds, and
	// both containers wait on it.
	r = nestedOnce(t, []*Demand{a, b}, 50*ms, []time.Duration{0, 0}, []float64{1, 1})
	if r.Pod.Stat.ThrottledPeriods != 10 || r.PodThrottledNs[0] == 0 || r.PodThrottledNs[1] == 0 {
		t.Errorf("pod only: %d periods throttled, waits %.1f and %.1f ms; want 10, both waiting", r.Pod.Stat.ThrottledPeriods, r.PodThrottledNs[0]/1e6, r.PodThrottledNs[1]/1e6)
	}
}

// randomBursts is a seeded demand: a background of 0.05 to 0.3 cores and
// bursts of 0.5 to 2 cores lasting 10 to 60 ms, every 100 to 400 ms.
func randomBursts(rng *rand.Rand, span time.Duration) *Demand {
	bg := 0.05 + 0.25*rng.Float64()
	type burst struct {
		from, to time.Duration
		c        float64
	}
	var bs []burst
	for t := 50 * time.Millisecond; t < span; t += time.Duration(100+rng.Intn(300)) * time.Millisecond {
		bs = append(bs, burst{t, t + time.Duration(10+rng.Intn(50))*time.Millisecond, 0.5 + 1.5*rng.Float64()})
	}
	return demandOf(span, func(t time.Duration) float64 {
		for _, b := range bs {
			if t >= b.from && t < b.to {
				return b.c
			}
		}
		return bg
	})
}

// TestNestedLoosePodIsOneQuota: a container's quota binding inside a pod
// quota that never runs dry counts what the one-quota replay of that
// container alone counts, at its own grid's phase: periods and throttled periods exactly, throttled
// time and delays to the histogram's resolution.
func TestNestedLoosePodIsOneQuota(t *testing.T) {
	for seed := int64(1); seed <= 50; seed++ {
		rng := rand.New(rand.NewSource(seed))
		ds := []*Demand{randomBursts(rng, 5*time.Second), randomBursts(rng, 5*time.Second)}
		quotas := []time.Duration{time.Duration(10+rng.Intn(60)) * time.Millisecond, time.Duration(10+rng.Intn(60)) * time.Millisecond}
		cores := []float64{ds[0].Bound(), ds[1].Bound()}
		loose := time.Duration((cores[0] + cores[1]) * float64(100*time.Millisecond))
		// Each pool's period grid at its own phase (every other seed at
		// the pod's).
		phases := []time.Duration{time.Duration(rng.Intn(100)) * time.Millisecond, time.Duration(rng.Intn(100)) * time.Millisecond}
		podPhase := time.Duration(rng.Intn(100)) * time.Millisecond
		if seed%2 == 0 {
			phases = []time.Duration{podPhase, podPhase}
		}
		hists := []*DelayHist{new(DelayHist), new(DelayHist)}
		r, err := ReplayNested(ds, NestedSetting{Period: 100 * time.Millisecond, Phase: podPhase, Phases: phases, Pod: loose, Quotas: quotas, Cores: cores}, hists)
		if err != nil {
			t.Fatal(err)
		}
		if r.Pod.Stat.ThrottledPeriods != 0 || r.Pod.ThrottledNs != 0 {
			t.Fatalf("seed %d: the loose pod quota throttled %d periods", seed, r.Pod.Stat.ThrottledPeriods)
		}
		for i, d := range ds {
			var h DelayHist
			one := Cut(d, 100*time.Millisecond, phases[i]).Replay(Setting{Quota: quotas[i], Cores: cores[i]}, &h, nil)
			got := r.Containers[i]
			if got.Stat != one.Stat {
				t.Errorf("seed %d container %d quota %s: nested %+v, one quota %+v", seed, i, quotas[i], got.Stat, one.Stat)
			}
			if math.Abs(got.ThrottledNs-one.ThrottledNs) > 1e-6*one.ThrottledNs+1e3 {
				t.Errorf("seed %d container %d: throttled %.3f ms nested, %.3f ms alone", seed, i, got.ThrottledNs/1e6, one.ThrottledNs/1e6)
			}
			// The two split work into pieces differently where a wait
			// ends inside a sample: a quantile may move by up to 0.5%
			// of the work, and 7% (two of the histogram's buckets).
			for _, q := range []float64{0.5, 0.9, 0.99} {
				g, lo, hi := got.Hist.Quantile(q), h.Quantile(q-0.005), h.Quantile(min(q+0.005, 1))
				if g < lo*0.93-0.1e6 || g > hi*1.07+0.1e6 {
					t.Errorf("seed %d container %d quota %s: delay q%.2f %.2f ms nested, %.2f to %.2f ms alone", seed, i, quotas[i], q, g/1e6, lo/1e6, hi/1e6)
				}
			}
		}
	}
}

// TestNestedRefuses: containers on different time axes, or counts that do
// not match, are refused saying what to do.
func TestNestedRefuses(t *testing.T) {
	a := demandOf(time.Second, constant(1))
	b := FromSamples([]time.Duration{0, 5 * time.Millisecond, time.Second}, []time.Duration{0, 1, 2})
	for _, tc := range []struct {
		ds   []*Demand
		s    NestedSetting
		want string
	}{
		{[]*Demand{a, b}, NestedSetting{Period: 100 * time.Millisecond, Quotas: make([]time.Duration, 2), Cores: []float64{1, 1}}, "AlignDemands"},
		{[]*Demand{a, a}, NestedSetting{Period: 100 * time.Millisecond, Quotas: make([]time.Duration, 1), Cores: []float64{1, 1}}, "one of each per container"},
		{nil, NestedSetting{Period: 100 * time.Millisecond}, "no container"},
	} {
		if _, err := ReplayNested(tc.ds, tc.s, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: want an error naming %q", err, tc.want)
		}
	}
}

// TestAlignDemands puts two containers sampled 5 ms apart on one axis:
// the union of their 10 ms grids over the span both cover, each one's work
// there counted exactly, each keeping its own parallelism bound.
func TestAlignDemands(t *testing.T) {
	a := demandOf(2*time.Second, constant(0.5))
	b := demandOf(2*time.Second, constant(1.5))
	al, err := AlignDemands([]*Demand{a, b}, []time.Duration{0, 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(al[0].At) != len(al[1].At) || al[0].At[1] != 5*time.Millisecond || al[0].Duration() != 1995*time.Millisecond {
		t.Fatalf("axis: %d and %d samples, second at %s, span %s; want one 5 ms axis over 1.995 s", len(al[0].At), len(al[1].At), al[0].At[1], al[0].Duration())
	}
	for i, want := range []float64{0.5, 1.5} {
		if math.Abs(al[i].MeanCores()-want) > 1e-6 || al[i].Cores != []int{1, 2}[i] {
			t.Errorf("container %d: %.6f cores, bound %d; want %.1f, %d", i, al[i].MeanCores(), al[i].Cores, want, []int{1, 2}[i])
		}
	}
	if _, err := AlignDemands([]*Demand{a, b}, []time.Duration{0, 10 * time.Second}); err == nil || !strings.Contains(err.Error(), "do not overlap") {
		t.Errorf("no overlap: %v", err)
	}
}
