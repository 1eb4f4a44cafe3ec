package presets

import (
	"time"

	"testing"

	"github.com/throttlelab/throttlelab/experiment"
)

// TestQuickRunsWhatItsCheckReads holds every quick variant to running what
// its check reads and nothing else: its check computes from a simulated
// quick run, and fails once any one config is left out of the run. A
// config the check does not read costs every repeat and judges nothing; a
// check that stopped finding a config it needs would judge nothing too.
func TestQuickRunsWhatItsCheckReads(t *testing.T) {
	for _, p := range All() {
		t.Run(p.Name, func(t *testing.T) {
			q, _, err := p.Quick(2)
			if err != nil {
				t.Fatal(err)
			}
			dir, how := simulateQuick(t, p, nil)
			if _, err := p.Evaluate(dir, how); err != nil {
				t.Fatalf("the whole quick run: %v", err)
			}
			if len(q.Spec.Configs) == 1 {
				return // the one config is the run
			}
			for _, c := range q.Spec.Configs {
				dir, how := simulateQuick(t, p, func(e *experiment.Experiment) error {
					dropConfigs(e, c.Name)
					if e.Spec.Reference == c.Name {
						e.Spec.Reference = e.Spec.Configs[0].Name
					}
					return nil
				})
				if _, err := p.Evaluate(dir, how); err == nil {
					t.Errorf("config %q left out of the quick run, the check still computes: it does not read it", c.Name)
				}
			}
		})
	}
}

// TestQuickF07BurstsStartAtOnePhase holds F7's quick bursts to a cycle
// that is not whole periods: a burst that ends throttled ends at a period
// boundary, so with whole periods the next starts at phase 0 or keeps the
// random phase its run began at, and runs disagreed by up to half the
// effect. The sleep stays over 1 s (no second holds parts of two bursts).
func TestQuickF07BurstsStartAtOnePhase(t *testing.T) {
	q, _, err := f07SchedBench.Quick(2)
	if err != nil {
		t.Fatal(err)
	}
	c, err := config(q, "limit-2")
	if err != nil {
		t.Fatal(err)
	}
	n := c.Neighbours[0]
	period := n.CPU.Period.Duration
	if n.Sleep.Duration <= time.Second {
		t.Errorf("asleep %s: a second may hold parts of two bursts", n.Sleep.Duration)
	}
	// The phase after a boundary: away from 0 and from the period's end,
	// where wake-up delays would move it across the boundary.
	if ph := n.Sleep.Duration % period; ph < period/4 || ph > period*3/4 {
		t.Errorf("asleep %s: bursts start %s into the %s period, want a quarter to three quarters in", n.Sleep.Duration, ph, period)
	}
}

// TestQuickF04HoldsTheStepItReads holds F4's quick load at the one step its
// check reads, for all of the run.
func TestQuickF04HoldsTheStepItReads(t *testing.T) {
	q, _, err := f04SingleThread.Quick(2)
	if err != nil {
		t.Fatal(err)
	}
	if r := q.Spec.Loads[0].Ramp; r.From != f04Clients || r.To != f04Clients {
		t.Errorf("ramp %d..%d clients, the check reads %d", r.From, r.To, f04Clients)
	}
}

// TestQuickF05CountsEnoughPairs holds the balancing presets' quick runs to
// 10000 pairs of consecutive requests a repeat: 3000 left a repeat's
// same-pod rate 0.006 either way and three repeats straddling the margins.
func TestQuickF05CountsEnoughPairs(t *testing.T) {
	for _, p := range []*Preset{f05Service, f05Ingress} {
		q, _, err := p.Quick(2)
		if err != nil {
			t.Fatal(err)
		}
		l := q.Spec.Loads[0]
		if pairs := l.Rate*l.Duration.Seconds() - 1; pairs < 9999 {
			t.Errorf("%s: %g requests/s for %s: %g pairs a repeat, want 10000", p.Name, l.Rate, l.Duration.Duration, pairs)
		}
	}
}
