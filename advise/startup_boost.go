package advise

import (
	"fmt"
	"io"
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

// WriteStartupBoost writes, in two lines, the boost of d's start-up
// against the advised limit of a (StartupBoost): the boost and the VPA's
// startupBoost fields, or why there is none; nothing when d shows no
// start-up.
func WriteStartupBoost(w io.Writer, d *Demand, a *Advice, o startup.Options) error {
	if a == nil {
		return nil
	}
	b, ok, err := StartupBoost(d, a.Recommendation.LimitMilli, o)
	switch {
	case !ok:
		return nil
	case err != nil:
		_, err = fmt.Fprintf(w, "start-up boost: none: %v\n", err)
		return err
	case !b.Needed:
		_, err = fmt.Fprintf(w, "start-up boost: %s\n", b.Note)
		return err
	}
	v := b.VPA()
	_, err = fmt.Fprintf(w, "start-up boost: %s (delayed %.2f s by %dm)\n  VPA startupBoost: cpu: {type: Quantity, quantity: %s, durationSeconds: %d}; kube-startup-cpu-boost: percentageIncrease %d, fixedDuration %d s\n",
		b.Note, b.DelaySeconds, b.LimitMilli, v.CPU.Quantity, v.CPU.DurationSeconds, b.KubeStartupCPUBoost(startup.Target{}).Spec.ResourcePolicy.ContainerPolicies[0].PercentageIncrease.Value, b.DurationSeconds)
	return err
}
