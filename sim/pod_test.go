package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
)

// TestParentQuotaBinds: two always-busy threads in children of 0.4 CPU each
// under a parent of 0.5 CPU on two cores: the parent's quota binds (it is
// throttled, the children together get 0.5), the children's own quotas do
// not (each gets about 0.25), and both children wait together (each is
// parked for a share of the time).
func TestParentQuotaBinds(t *testing.T) {
	m := NewMachine(DefaultParams(2))
	const period = 100 * time.Millisecond
	pod := m.NewGroup("pod", 512, 50*time.Millisecond, period, 0, nil, 0)
	var kids []*Group
	var threads []*Thread
	for i, phase := range []time.Duration{30 * time.Millisecond, 70 * time.Millisecond} {
		g := m.NewChildGroup(pod, "c"+string(rune('0'+i)), 256, 40*time.Millisecond, period, 0, phase)
		th := m.NewThread(g, noise{})
		m.Wake(th, time.Hour)
		kids, threads = append(kids, g), append(threads, th)
	}
	const span = 2 * time.Second
	m.RunUntil(span, func() bool { return false })
	m.AdvanceAll()
	if got := pod.UsageNs / float64(span); got < 0.47 || got > 0.53 {
		t.Errorf("the pod used %.3f CPU, want its quota 0.5", got)
	}
	sum := 0.0
	for i, g := range kids {
		sum += g.UsageNs
		if got := g.UsageNs / float64(span); got < 0.2 || got > 0.3 {
			t.Errorf("child %d used %.3f CPU, want about half the pod's 0.5", i, got)
		}
		if st := g.CPUStat(m); st.ThrottledPeriods > 1 {
			t.Errorf("child %d throttled by its own 0.4 quota in %d periods, want the pod's to bind instead", i, st.ThrottledPeriods)
		}
		if threads[i].Parked < 0.3*float64(span) {
			t.Errorf("child %d parked %.0f ms of %s, want it waiting on the pod's quota half the time", i, threads[i].Parked/1e6, span)
		}
	}
	if sum != pod.UsageNs {
		t.Errorf("children used %.0f ns, their pod %.0f", sum, pod.UsageNs)
	}
	if st := pod.CPUStat(m); st.ThrottledPeriods < 15 || st.ThrottledUsec == 0 {
		t.Errorf("the pod's cpu.stat %+v, want it throttled in most of its 20 periods", st)
	}
}

const podSimSpec = `apiVersion: throttlelab/v1alpha1
kind: Experiment
metadata:
  name: podsim
spec:
  workload:
    request: burn
    burn: cpu=5ms
  load:
    mode: rate
    rate: 140
    arrivals: poisson
    duration: 4s
  balancer: random
  configs:
    - name: pod
      instances: 2
      cpu:
        request: 300m
        limit: 600m
POD`

// simPod simulates the one run of podSimSpec with pod block pod ("" for
// none) on two cores.
func simPod(t *testing.T, pod string) (p50, p99 float64, throttled uint64) {
	t.Helper()
	e, err := experiment.Parse([]byte(strings.Replace(podSimSpec, "POD", pod, 1)), "podsim.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Simulate(context.Background(), e, e.Runs()[0], Options{Cores: 2})
	if err != nil {
		t.Fatal(err)
	}
	return rs.Summary.Latency.P50, rs.Summary.Latency.P99, rs.Total.ThrottledPeriods
}

// TestPodLimitSim: a pod quota that binds delays the instances (p99 up
// against none); one that never binds (2 CPUs over two instances of 0.6)
// gives the same results as none, to the bit (same seed).
func TestPodLimitSim(t *testing.T) {
	_, none99, noneThr := simPod(t, "")
	loose50, loose99, looseThr := simPod(t, "      pod:\n        cpu:\n          limit: 2\n")
	none50, _, _ := simPod(t, "")
	if loose99 != none99 || loose50 != none50 || looseThr != noneThr {
		t.Errorf("a loose pod limit changed the run: p50 %.3f p99 %.3f throttled %d, without %.3f %.3f %d", loose50, loose99, looseThr, none50, none99, noneThr)
	}
	_, tight99, _ := simPod(t, "      pod:\n        cpu:\n          limit: 700m\n")
	if tight99 < 1.5*none99 {
		t.Errorf("p99 %.2f ms under a 700m pod limit (0.7 cores of demand), %.2f ms without: want the pod quota to delay the instances", tight99, none99)
	}
	t.Logf("p99: without a pod limit %.2f ms, under 2 CPUs %.2f ms, under 700m %.2f ms", none99, loose99, tight99)
}

// TestChildQuotaInsidePod: inside a pod of 1 CPU that does not bind, each
// child's own quota still does (0.2 and 0.6 CPU for two always-busy threads),
// and the pod is never throttled.
func TestChildQuotaInsidePod(t *testing.T) {
	m := NewMachine(DefaultParams(2))
	const period = 100 * time.Millisecond
	// Periods in phase: with the children's periods out of step with the
	// pod's, a child may use more than its quota within one pod period
	// (the end of one of its own and the start of the next).
	pod := m.NewGroup("pod", 1024, 100*time.Millisecond, period, 0, nil, 0)
	var kids []*Group
	for i, q := range []time.Duration{20 * time.Millisecond, 60 * time.Millisecond} {
		g := m.NewChildGroup(pod, "c"+string(rune('0'+i)), 256, q, period, 0, 0)
		m.Wake(m.NewThread(g, noise{}), time.Hour)
		kids = append(kids, g)
	}
	const span = 2 * time.Second
	m.RunUntil(span, func() bool { return false })
	m.AdvanceAll()
	for i, want := range []float64{0.2, 0.6} {
		if got := kids[i].UsageNs / float64(span); got < want-0.02 || got > want+0.02 {
			t.Errorf("child %d used %.3f CPU, want its own quota %.1f", i, got, want)
		}
		if st := kids[i].CPUStat(m); st.ThrottledPeriods < 15 {
			t.Errorf("child %d throttled in %d periods, want most of 20", i, st.ThrottledPeriods)
		}
	}
	if st := pod.CPUStat(m); st.ThrottledPeriods != 0 {
		t.Errorf("the pod was throttled in %d periods under 0.8 CPU of its 1", st.ThrottledPeriods)
	}
}
