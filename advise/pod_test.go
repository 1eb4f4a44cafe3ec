package advise

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/cfs/cfstest"
	"github.com/throttlelab/throttlelab/units"
)

// acceptancePod is issue 52's pod: an app of 0.44 cores on average (1.5
// cores for 30 ms every 200 ms, 43/170 core between) and a sidecar of 0.2
// cores, sampled at 10 ms for span.
func acceptancePod(t *testing.T, span time.Duration) PodDemand {
	t.Helper()
	app := cfs.FromSamples(cfstest.Curve(span, func(t time.Duration) float64 {
		if t%(200*time.Millisecond) < 30*time.Millisecond {
			return 1.5
		}
		return 43.0 / 170
	}))
	proxy := cfs.FromSamples(cfstest.Curve(span, cfstest.Constant(0.2)))
	return PodDemand{Names: []string{"app", "proxy"}, Demands: []*Demand{app, proxy}, Source: "test"}
}

// burstyPod is two containers whose bursts take turns: the app's 1.5
// cores for 30 ms every 200 ms (43/170 core between), the sidecar's one
// core for 30 ms every 200 ms, 100 ms later (0.1 core between).
func burstyPod(t *testing.T, span time.Duration) PodDemand {
	t.Helper()
	pd := acceptancePod(t, span)
	pd.Demands[1] = cfs.FromSamples(cfstest.Curve(span, func(t time.Duration) float64 {
		if (t+100*time.Millisecond)%(200*time.Millisecond) < 30*time.Millisecond {
			return 1
		}
		return 0.1
	}))
	return pd
}

// TestAdvisePod: every option found is the smallest that meets the target
// (10m less misses it), "both" costs between the pod-level limit and the
// per-container limits, and one pod-level limit is cheaper than
// per-container limits exactly when the containers' peaks take turns. On
// the acceptance pod (a steady sidecar) each period's summed peak is the
// app's peak plus the sidecar's steady use: the two cost the same. Where
// the sidecar's bursts fall in the app's quiet periods, one pod quota
// covers both for less, and the sidecar then waits for the pod's quota
// when the app's bursts spend it: its wait is its own.
func TestAdvisePod(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pd    PodDemand
		saved func(int64) bool
	}{
		{"steady sidecar", acceptancePod(t, 60*time.Second), func(s int64) bool { return s == 0 }},
		{"bursts taking turns", burstyPod(t, 60*time.Second), func(s int64) bool { return s >= 200 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pd := tc.pd
			a, err := AdvisePod(pd, PodRequest{})
			if err != nil {
				t.Fatal(err)
			}
			perC, podL, both := a.Option(PodPerContainer), a.Option(PodLevel), a.Option(PodBoth)
			if !perC.Met || !podL.Met || !both.Met {
				t.Fatalf("options met: %v %v %v, want all", perC.Met, podL.Met, both.Met)
			}
			if a.Cheapest != PodLevel || a.Against != PodPerContainer || a.SavedMilli != perC.CostMilli-podL.CostMilli || !tc.saved(a.SavedMilli) {
				t.Errorf("cheapest %s against %s by %dm; costs per-container %dm, pod-level %dm", a.Cheapest, a.Against, a.SavedMilli, perC.CostMilli, podL.CostMilli)
			}
			if both.CostMilli < podL.CostMilli || both.CostMilli > perC.CostMilli {
				t.Errorf("both at %dm, want between pod-level %dm and per-container %dm", both.CostMilli, podL.CostMilli, perC.CostMilli)
			}
			// A pod limit must be above the pod's mean use.
			if float64(podL.PodLimitMilli) <= 1000*a.Sampled.MeanCores || podL.PodThrottledRatio > 0.05 {
				t.Errorf("pod-level %dm throttled %.3f, want above %.2f cores and at most 5%%", podL.PodLimitMilli, podL.PodThrottledRatio, a.Sampled.MeanCores)
			}
			// Smallest: 10m less misses.
			r := &podRun{pd: pd, period: 100 * time.Millisecond, phases: DefaultPodPhases, target: a.Target, cores: []float64{pd.Demands[0].Bound(), pd.Demands[1].Bound()}}
			if o := r.eval(PodLevel, podL.PodLimitMilli-10, []int64{0, 0}, -1); o.Met {
				t.Errorf("pod-level %dm meets the target too", podL.PodLimitMilli-10)
			}
			for i, c := range perC.Containers {
				l := []int64{perC.Containers[0].LimitMilli, perC.Containers[1].LimitMilli}
				l[i] -= 10
				if o := r.eval(PodPerContainer, 0, l, -1); o.Met {
					t.Errorf("%s at %dm meets the target too", c.Name, l[i])
				}
			}
			if perC.Containers[1].PodThrottledSeconds != 0 {
				t.Errorf("proxy waited %.3fs for a pod quota there is not", perC.Containers[1].PodThrottledSeconds)
			}
			var b bytes.Buffer
			if err := WritePodText(&b, a); err != nil {
				t.Fatal(err)
			}
			text := b.String()
			if n := strings.Count(text, "\n"); n > 15 || !strings.Contains(text, "answer: one pod-level limit of "+units.FormatMilliCPU(podL.PodLimitMilli)) {
				t.Errorf("%d lines:\n%s", n, text)
			}
			t.Logf("\n%s", text)
		})
	}
	// Under a pod limit of the app's own plus 100m, the sidecar's bursts
	// find the pod's quota spent by the app's: it waits for the pod.
	pd := burstyPod(t, 20*time.Second)
	r := &podRun{pd: pd, period: 100 * time.Millisecond, phases: 1, target: DefaultTarget().WithDefaults(), cores: []float64{2, 1}}
	if o := r.eval(PodLevel, 700, []int64{0, 0}, -1); o.Containers[1].PodThrottledSeconds <= 0 || o.PodThrottledRatio <= 0 {
		t.Errorf("pod-level 700m: proxy waited %.3fs for the pod, pod throttled %.3f; want both above 0", o.Containers[1].PodThrottledSeconds, o.PodThrottledRatio)
	}

	// One container: refused.
	if _, err := AdvisePod(PodDemand{Names: []string{"app"}, Demands: pd.Demands[:1]}, PodRequest{}); err == nil || !strings.Contains(err.Error(), "advise its demand on its own") {
		t.Errorf("one container: %v", err)
	}
}
