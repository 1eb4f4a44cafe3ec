package startup

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"
)

const step = 10 * time.Millisecond

// prof builds a profile from runs of (intervals, cores).
func prof(runs ...float64) Profile {
	p := Profile{Step: step}
	for i := 0; i+1 < len(runs); i += 2 {
		for range int(runs[i]) {
			p.Cores = append(p.Cores, runs[i+1])
		}
	}
	return p
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-6 {
		t.Errorf("%s = %.6f, want %.6f", what, got, want)
	}
}

func TestEnd(t *testing.T) {
	for _, c := range []struct {
		name string
		p    Profile
		want int
	}{
		{"busy then quiet", prof(100, 2, 100, 0), 100},
		{"a pause shorter than QuietFor is the start-up's", prof(30, 1, 20, 0, 30, 1, 100, 0), 80},
		{"a pause of QuietFor ends it", prof(30, 1, 50, 0, 30, 1, 100, 0), 30},
		{"idle before the first work is the start-up's", prof(60, 0, 10, 1, 60, 0), 70},
		{"no quiet end: the last busy interval", prof(100, 1, 10, 0.01), 100},
	} {
		if got := c.p.End(Options{}); got != c.want {
			t.Errorf("%s: End = %d, want %d", c.name, got, c.want)
		}
	}
}

// Hand-computed: 1 s at 2 cores (2 CPU-s) under 500m keeps a backlog of
// 1.5 CPU-s at 1 s, served in 3 s more: 4 s. Within 10% (1.1 s) needs
// 2/1.1 = 1.8182 cores (the bound at s=0), rounded up to 1819m, under
// which the start-up takes 1 + 100*0.01*(2-1.819)/1.819 = 1.0995 s.
func TestPlanFlat(t *testing.T) {
	b, err := Plan(prof(100, 2, 100, 0), 500, Options{})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "work", b.WorkCPUSeconds, 2)
	near(t, "unlimited", b.UnlimitedSeconds, 1)
	near(t, "at limit", b.AtLimitSeconds, 4)
	near(t, "delay", b.DelaySeconds, 3)
	near(t, "target", b.TargetSeconds, 1.1)
	// The duration: twice the boosted length (DefaultSlack), 2.199 s,
	// under the 4 s at the limit: 3 s.
	if !b.Needed || b.BoostMilli != 1819 || b.DurationSeconds != 3 || b.Capped {
		t.Fatalf("boost %+v, want 1819m for 3 s", b)
	}
	near(t, "boosted", b.BoostedSeconds, 1+0.181/1.819)
	if v := b.VPA(); v == nil || v.CPU.Type != "Quantity" || v.CPU.Quantity != "1319m" || v.CPU.DurationSeconds != 3 {
		t.Errorf("VPA %+v, want Quantity 1319m for 3 s", v)
	}
	o := b.KubeStartupCPUBoost(Target{Name: "api-boost", Namespace: "shop", Container: "api", MatchLabels: map[string]string{"app": "api"}})
	js, _ := json.Marshal(o)
	want := `{"apiVersion":"autoscaling.x-k8s.io/v1alpha1","kind":"StartupCPUBoost","metadata":{"name":"api-boost","namespace":"shop"},"selector":{"matchLabels":{"app":"api"}},"spec":{"resourcePolicy":{"containerPolicies":[{"containerName":"api","percentageIncrease":{"value":264}}]},"durationPolicy":{"fixedDuration":{"unit":"Seconds","value":3}}}}`
	if string(js) != want {
		t.Errorf("StartupCPUBoost\n got %s\nwant %s", js, want)
	}
}

// Hand-computed: 0.5 s at 4 cores then 0.5 s at 0.5 (2.25 CPU-s, 1 s).
// Under 1 core it is busy throughout: 2.25 s. Within 10%: the bound at
// s=0, 2.25/1.1 = 2.04545, rounded up to 2046m (at s=0.5 the bound is
// 0.25/0.6). Under 2046m: a backlog of 0.5*(4-2.046) = 0.977 at 0.5 s,
// drained by 0.5*(2.046-0.5) = 0.773 to 0.204 at 1 s: 1 + 0.204/2.046.
func TestPlanFrontLoaded(t *testing.T) {
	p := prof(50, 4, 50, 0.5, 100, 0)
	b, err := Plan(p, 1000, Options{})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "at 1 core", b.AtLimitSeconds, 2.25)
	if b.BoostMilli != 2046 {
		t.Fatalf("boost %dm, want 2046m", b.BoostMilli)
	}
	near(t, "boosted", b.BoostedSeconds, 1+(0.5*(4-2.046)-0.5*(2.046-0.5))/2.046)
	if b.BoostedSeconds > b.TargetSeconds {
		t.Errorf("boosted %.4f s over the target %.4f s", b.BoostedSeconds, b.TargetSeconds)
	}
	// A 50% share: 2.25/1.5 = 1.5 cores, under which the start-up takes
	// 1 + (0.5*2.5 - 0.5*1)/1.5 = 1.5 s; twice that is over the 2.25 s at
	// the limit, which bounds the duration: 3 s.
	b, _ = Plan(p, 1000, Options{Share: 0.5})
	if b.BoostMilli != 1500 || b.DurationSeconds != 3 {
		t.Errorf("50%% share: boost %dm for %d s, want 1500m for 3 s", b.BoostMilli, b.DurationSeconds)
	}
}

func TestPlanNoBoost(t *testing.T) {
	b, err := Plan(prof(100, 0.3, 100, 0), 500, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Needed || b.DelaySeconds != 0 || b.BoostMilli != 500 || b.VPA() != nil || b.KubeStartupCPUBoost(Target{}) != nil {
		t.Errorf("a start-up under its limit got a boost: %+v", b)
	}
	// 1 s at 0.55 cores under 500m: 0.05 s late, within 10%: no boost,
	// but the delay is said.
	b, _ = Plan(prof(100, 0.55, 100, 0), 500, Options{})
	if b.Needed {
		t.Errorf("boost for a start-up within its share: %+v", b)
	}
	near(t, "delay", b.DelaySeconds, 0.1)
}

func TestPlanCapped(t *testing.T) {
	b, err := Plan(prof(100, 2, 100, 0), 500, Options{MaxCores: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !b.Capped || b.BoostMilli != 1000 {
		t.Fatalf("boost %+v, want capped at 1000m", b)
	}
	near(t, "boosted", b.BoostedSeconds, 2) // 2 CPU-s at 1 core
	if b.DurationSeconds != 4 {             // 2 s with slack, the 4 s at the limit
		t.Errorf("duration %d s, want 4", b.DurationSeconds)
	}
}

func TestDuration(t *testing.T) {
	for _, c := range []struct {
		boosted, atLimit, slack float64
		want                    int32
	}{
		{1.0995, 4, 1, 3},  // twice the boosted length
		{1.5, 2.25, 1, 3},  // bounded by the length at the limit
		{2, 2, 1, 2},       // capped: the boosted length is the length at the limit
		{0.97, 7.13, 1, 2}, // the JVM row of docs/agent.md: 1 s without slack
		{0.97, 7.13, 0.5, 2},
		{1.0, 7, 0.5, 2}, // exactly 1.5 s rounds up
		{3.0, 7, 0.25, 4},
	} {
		if got := Duration(c.boosted, c.atLimit, c.slack); got != c.want {
			t.Errorf("Duration(%.4g, %.4g, %.2g) = %d, want %d", c.boosted, c.atLimit, c.slack, got, c.want)
		}
	}
}

// Hand-computed: 1 s at 2 cores, boosted to 1 core, limited to 0.5. A
// boost for 1 s leaves 1 CPU-s at 1 s, served at 0.5: 3 s; for 1.5 s it
// serves 0.5 of it, the other 0.5 at the limit: 2.5 s; for 10 s: 2 s.
func TestLengthBoosted(t *testing.T) {
	p := prof(100, 2, 100, 0)
	n := p.End(Options{})
	near(t, "boost for 1 s", p.LengthBoosted(n, 1, 1, 0.5), 3)
	near(t, "boost for 1.5 s", p.LengthBoosted(n, 1, 1.5, 0.5), 2.5)
	near(t, "boost for 10 s", p.LengthBoosted(n, 1, 10, 0.5), p.LengthAt(n, 1))
	near(t, "no boost", p.LengthBoosted(n, 0.5, 0, 0.5), p.LengthAt(n, 0.5))
}

// The slack's point: a start-up that gets half the boost (a node twice
// as busy as when its profile was taken) still ends while the boost
// lasts; with the boosted length's whole seconds alone (no slack) it
// overruns and finishes its rest at the limit.
func TestDurationSlackHoldsASlowerStartup(t *testing.T) {
	p := prof(100, 2, 100, 0)
	n := p.End(Options{})
	b, err := Plan(p, 500, Options{})
	if err != nil {
		t.Fatal(err)
	}
	half := float64(b.BoostMilli) / 1000 / 2
	slow := p.LengthAt(n, half)
	if got := p.LengthBoosted(n, half, float64(b.DurationSeconds), 0.5); got > slow+1e-9 || slow > float64(b.DurationSeconds) {
		t.Errorf("at half the boost: %.3f s, want the %.3f s of a boost that lasts (duration %d s)", got, slow, b.DurationSeconds)
	}
	noSlack := float64(int32(math.Ceil(b.BoostedSeconds)))
	if got := p.LengthBoosted(n, half, noSlack, 0.5); got <= slow+0.1 {
		t.Errorf("without slack (%g s) at half the boost: %.3f s, want it to overrun the %.3f s", noSlack, got, slow)
	}
}

func TestPlanBadInput(t *testing.T) {
	if _, err := Plan(prof(10, 2, 100, 0), 500, Options{}); !errors.Is(err, ErrTooShort) {
		t.Errorf("a 100 ms start-up: %v, want ErrTooShort", err)
	}
	if _, err := Plan(prof(100, 0, 100, 0), 500, Options{}); !errors.Is(err, ErrTooShort) {
		t.Errorf("an idle start-up: %v, want ErrTooShort", err)
	}
	if _, err := Plan(prof(100, 2), 0, Options{}); err == nil {
		t.Error("no limit: no error")
	}
	if _, err := Plan(Profile{Cores: []float64{1}}, 500, Options{}); err == nil {
		t.Error("no step: no error")
	}
}

// LimitFor is LengthAt's inverse: the least limit that ends by the target
// does (within a millicore), and one a millicore less does not.
func TestLimitForInvertsLengthAt(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for k := range 200 {
		p := Profile{Step: step}
		for range 20 + rng.Intn(300) {
			p.Cores = append(p.Cores, rng.Float64()*4*float64(rng.Intn(2)))
		}
		n := len(p.Cores)
		target := p.LengthAt(n, 0) * (1 + rng.Float64())
		l := p.LimitFor(n, target)
		if got := p.LengthAt(n, l+1e-3); got > target+1e-9 {
			t.Fatalf("case %d: under LimitFor+1m = %.4f cores the start-up takes %.6f s, over the target %.6f", k, l+1e-3, got, target)
		}
		if l > 2e-3 {
			if got := p.LengthAt(n, l-1e-3); got <= target {
				t.Fatalf("case %d: %.4f cores, under LimitFor, still ends by the target (%.6f <= %.6f)", k, l-1e-3, got, target)
			}
		}
	}
}

// FromSamples spreads each interval's use over the grid from from: by
// hand, a 25 ms interval of 50 ms CPU (2 cores) covers cells 0, 1 and half
// of 2; a 5 ms one of 2.5 ms (0.5 cores), the other half of 2.
func TestFromSamples(t *testing.T) {
	ms := time.Millisecond
	p := FromSamples([]time.Duration{0, 100 * ms, 125 * ms, 130 * ms}, []time.Duration{0, 5 * ms, 55 * ms, 57500 * time.Microsecond}, 100*ms, step, 0)
	want := []float64{2, 2, 1.25}
	if len(p.Cores) != len(want) {
		t.Fatalf("cells %v, want %v", p.Cores, want)
	}
	for i := range want {
		near(t, fmt.Sprintf("cell %d", i), p.Cores[i], want[i])
	}
}

// RunUnlimited runs arrivals at most cores CPUs at once: by hand, 0.05
// CPU-s moved into one 10 ms cell (5 cores) on 2 CPUs runs 2, 2, then the
// next cell's 0.5 plus the last 1.
func TestRunUnlimited(t *testing.T) {
	got := RunUnlimited([]float64{5, 0, 0.5}, 2)
	want := []float64{2, 2, 1.5}
	if len(got) != len(want) {
		t.Fatalf("%v, want %v", got, want)
	}
	for i := range want {
		near(t, fmt.Sprintf("cell %d", i), got[i], want[i])
	}
	if got := RunUnlimited([]float64{6}, 2); len(got) != 3 {
		t.Errorf("6 cores in one cell on 2 CPUs: %v, want three cells of 2", got)
	}
}

// Hand-computed: a start-up its limit hid (6 s at 0.2 cores, 1.2 CPU-s,
// under 200m) is sized as 1.2 CPU-s on 2 CPUs from its start: 0.6 s
// unlimited, within 10% (0.66 s) 1.2/0.66 = 1819m; the duration its whole
// 6 s under the limit; the note says the demand was hidden.
func TestPlanHidden(t *testing.T) {
	p := prof(600, 0.2, 100, 0)
	b, err := Plan(p, 200, Options{Hidden: true, BoundCores: 2, MaxCores: 2})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "unlimited", b.UnlimitedSeconds, 0.6)
	near(t, "at limit", b.AtLimitSeconds, 6)
	if !b.Needed || b.BoostMilli != 1819 || b.DurationSeconds != 6 || !strings.Contains(b.Note, "hidden") {
		t.Errorf("boost %dm for %d s, note %q: want 1819m for 6 s, saying the demand was hidden", b.BoostMilli, b.DurationSeconds, b.Note)
	}
	// Sized from the profile as seen, the same start-up needs no boost.
	if seen, _ := Plan(p, 200, Options{}); seen.Needed {
		t.Errorf("the profile as seen: %+v, want no boost (the limit hid its demand)", seen)
	}
	if _, err := Plan(p, 200, Options{Hidden: true}); err == nil {
		t.Error("a hidden start-up without BoundCores: no error")
	}
}
