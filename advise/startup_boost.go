package advise

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/startup"
)

// StartupBoost sizes the boost (package startup) of the start-up at the
// beginning of d, the part the advice leaves out (advise's own rule over
// 5 s means), against a limit of limitMilli: on its 10 ms demand, run at
// most d's CPUs at once. ok is false when d shows no start-up; err is
// startup.Plan's (startup.ErrTooShort for one too short to measure).
func StartupBoost(d *Demand, limitMilli int64, o startup.Options) (b startup.Boost, ok bool, err error) {
	cut, _ := startupOf(d)
	if cut <= 0 {
		return b, false, nil
	}
	k := 1
	for k < len(d.At)-1 && d.At[k]-d.At[0] < cut {
		k++
	}
	usage := make([]time.Duration, k+1)
	for i := range usage {
		usage[i] = d.UsageAt(i)
	}
	p := startup.FromSamples(d.At[:k+1], usage, d.At[0], 10*time.Millisecond, d.Bound())
	b, err = startup.Plan(p, limitMilli, o)
	return b, true, err
}

// StartupAdvice is the boost of the start-up the advice leaves out, as
// advise's JSON carries it: the boost (startup.Boost: its work, length
// unlimited and under the limit, boost cores and duration) with the VPA's
// startupBoost fields and a kube-startup-cpu-boost object; or, with Boost
// nil, BoostWhy saying why there is none (a start-up too short to measure).
type StartupAdvice struct {
	Boost    *StartupBoostAdvice `json:"boost,omitempty"`
	BoostWhy string              `json:"boost_why,omitempty"`
}

// StartupBoostAdvice is a start-up's boost with its renderings (the
// agent's /advice has the same fields).
type StartupBoostAdvice struct {
	startup.Boost
	VPA             *startup.VPAStartupBoost `json:"vpa_startup_boost,omitempty"`
	StartupCPUBoost *startup.StartupCPUBoost `json:"startup_cpu_boost,omitempty"`
}

// AddStartupBoost sets a.Startup from the start-up at the beginning of d
// (StartupBoost against the advised limit); a.Startup stays nil when d
// shows no start-up. t names the kube-startup-cpu-boost object.
func AddStartupBoost(a *Advice, d *Demand, o startup.Options, t startup.Target) {
	if a == nil {
		return
	}
	b, ok, err := StartupBoost(d, a.Recommendation.LimitMilli, o)
	switch {
	case !ok:
		return
	case err != nil:
		a.Startup = &StartupAdvice{BoostWhy: "no boost: " + err.Error()}
		return
	}
	sb := &StartupBoostAdvice{Boost: b}
	if b.Needed {
		sb.VPA = b.VPA()
		if t.Name == "" {
			t.Name = "app-startup-boost"
		}
		if t.Container == "" {
			t.Container = "app"
		}
		sb.StartupCPUBoost = b.KubeStartupCPUBoost(t)
	}
	a.Startup = &StartupAdvice{Boost: sb}
}

// StartupLines is the start-up boost of a (AddStartupBoost) in at most two
// lines for the brief answer: the boost and the VPA's and
// kube-startup-cpu-boost's fields, or why there is none; nil without one.
func StartupLines(a *Advice) []string {
	if a == nil || a.Startup == nil {
		return nil
	}
	st := a.Startup
	if st.Boost == nil {
		return []string{"start-up boost: " + strings.TrimPrefix(st.BoostWhy, "no boost: ")}
	}
	b := st.Boost
	if !b.Needed {
		return []string{"start-up boost: " + b.Note}
	}
	v := b.VPA
	pct := int64(0)
	if k := b.StartupCPUBoost; k != nil && len(k.Spec.ResourcePolicy.ContainerPolicies) > 0 {
		pct = k.Spec.ResourcePolicy.ContainerPolicies[0].PercentageIncrease.Value
	}
	return []string{fmt.Sprintf("start-up boost: %s (delayed %.2f s by %dm)", b.Note, b.DelaySeconds, b.LimitMilli),
		fmt.Sprintf("  VPA startupBoost: cpu: {type: Quantity, quantity: %s, durationSeconds: %d}; kube-startup-cpu-boost: percentageIncrease %d, fixedDuration %d s",
			v.CPU.Quantity, v.CPU.DurationSeconds, pct, b.DurationSeconds)}
}

// WriteStartupBoost writes the start-up boost of d against the advised
// limit of a (AddStartupBoost, StartupLines), in at most two lines;
// nothing when d shows no start-up.
func WriteStartupBoost(w io.Writer, d *Demand, a *Advice, o startup.Options) error {
	if a == nil {
		return nil
	}
	if a.Startup == nil {
		AddStartupBoost(a, d, o, startup.Target{})
	}
	for _, l := range StartupLines(a) {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}
