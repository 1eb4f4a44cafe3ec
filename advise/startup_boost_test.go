package advise

import (
	"bytes"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/startup"
)

// recordedStart is 10 ms samples of a program busy at busy cores for its
// first startFor, then at 0.3 cores (seeded noise) to 90 s.
func recordedStart(busy float64, startFor time.Duration) *Demand {
	rng := rand.New(rand.NewSource(7))
	d := &Demand{Cores: 2}
	var u time.Duration
	for t := time.Duration(0); t <= 90*time.Second; t += 10 * time.Millisecond {
		d.At, d.Usage = append(d.At, t), append(d.Usage, u)
		c := 0.3 * (0.8 + 0.4*rng.Float64())
		if t < startFor {
			c = busy
		}
		u += time.Duration(c * float64(10*time.Millisecond))
	}
	return d
}

// A recorded run that starts busy (1.5 cores for 10 s: 15 CPU-s) gets a
// boost against a 500m limit: 30 s under it against 10 s unlimited, so
// within 10% (11 s) needs 15/11 = 1364m, by hand; a run with no start-up
// prints nothing.
func TestStartupBoostRecorded(t *testing.T) {
	b, ok, err := StartupBoost(recordedStart(1.5, 10*time.Second), 500, startup.Options{})
	if !ok || err != nil {
		t.Fatalf("no start-up found: %v %v", ok, err)
	}
	t.Logf("%+v", b)
	// the start-up as advise cuts it runs in 5 s steps past the busy 10 s:
	// its end is the last busy 10 ms (the steady 0.3 cores is never quiet)
	if !b.Needed || b.WorkCPUSeconds < 15 || b.BoostMilli < 1364 || b.BoostMilli > 1500 || b.BoostedSeconds > b.TargetSeconds {
		t.Errorf("boost %+v: want about 1364m, within its target", b)
	}
	var out bytes.Buffer
	if err := WriteStartupBoost(&out, recordedStart(1.5, 10*time.Second), &Advice{Recommendation: Recommendation{Evaluation: Evaluation{LimitMilli: 500}}}, startup.Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "start-up boost: boost to") || !strings.Contains(out.String(), "VPA startupBoost: cpu: {type: Quantity") {
		t.Errorf("printed %q", out.String())
	}
	out.Reset()
	if err := WriteStartupBoost(&out, recordedStart(0.3, 0), &Advice{Recommendation: Recommendation{Evaluation: Evaluation{LimitMilli: 500}}}, startup.Options{}); err != nil || out.Len() != 0 {
		t.Errorf("a run with no start-up printed %q (%v)", out.String(), err)
	}
}

// AddStartupBoost puts the boost in the advice (the JSON's startup
// object) with both renderings where one is needed, leaves it out where
// there is no start-up, and StartupLines says the same in two lines.
func TestAddStartupBoost(t *testing.T) {
	a := &Advice{Recommendation: Recommendation{Evaluation: Evaluation{LimitMilli: 500}}}
	AddStartupBoost(a, recordedStart(1.5, 10*time.Second), startup.Options{}, startup.Target{})
	st := a.Startup
	if st == nil || st.Boost == nil || !st.Boost.Needed || st.Boost.VPA == nil || st.Boost.StartupCPUBoost == nil || st.BoostWhy != "" {
		t.Fatalf("startup %+v: want a needed boost with the VPA's fields and a kube-startup-cpu-boost object", st)
	}
	if st.Boost.StartupCPUBoost.Spec.ResourcePolicy.ContainerPolicies[0].ContainerName != "app" {
		t.Errorf("kube-startup-cpu-boost %+v: want the container named app when none is given", st.Boost.StartupCPUBoost.Spec)
	}
	lines := StartupLines(a)
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "start-up boost: boost to") || !strings.Contains(lines[1], "quantity: "+st.Boost.VPA.CPU.Quantity) {
		t.Errorf("lines %q: want the boost and the VPA's quantity %s", lines, st.Boost.VPA.CPU.Quantity)
	}
	none := &Advice{Recommendation: Recommendation{Evaluation: Evaluation{LimitMilli: 500}}}
	AddStartupBoost(none, recordedStart(0.3, 0), startup.Options{}, startup.Target{})
	if none.Startup != nil || StartupLines(none) != nil {
		t.Errorf("a run with no start-up got %+v", none.Startup)
	}
}
