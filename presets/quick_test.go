package presets

import (
	"slices"
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

// TestQuickF07BurstsSweepThePeriod holds F7's quick bursts to starting at
// phases of the quota's period spread evenly, whatever their number: with
// every burst of a run at one phase, a run measured one random phase's
// goodput and runs disagreed by up to half the effect.
func TestQuickF07BurstsSweepThePeriod(t *testing.T) {
	q, _, err := f07SchedBench.Quick(2)
	if err != nil {
		t.Fatal(err)
	}
	c, err := config(q, "limit-2")
	if err != nil {
		t.Fatal(err)
	}
	n := c.Neighbours[0]
	period, cycle := n.CPU.Period.Duration, n.Busy.Duration+n.Sleep.Duration
	if n.Sleep.Duration <= time.Second {
		t.Errorf("asleep %s: a second may hold parts of two bursts", n.Sleep.Duration)
	}
	for bursts := 4; bursts <= 12; bursts++ {
		var phases []time.Duration
		for i := range bursts {
			phases = append(phases, time.Duration(i)*cycle%period)
		}
		slices.Sort(phases)
		gap := phases[0] + period - phases[len(phases)-1]
		for i := 1; i < len(phases); i++ {
			gap = max(gap, phases[i]-phases[i-1])
		}
		// Evenly spread: no gap over 2.5 times the even one (the golden
		// ratio's steps leave at most three gap sizes).
		if limit := period * 5 / 2 / time.Duration(bursts); gap > limit {
			t.Errorf("%d bursts of a %s cycle: phases %v leave a gap of %s of the %s period, want at most %s", bursts, cycle, phases, gap, period, limit)
		}
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
