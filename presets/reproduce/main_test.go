package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/verdict"
)

// TestBudgets splits what is left over the presets left, carries unused
// time on, gives the simulation a fifth (at most a minute), and still
// gives a preset past the total its first look (1s).
func TestBudgets(t *testing.T) {
	m := time.Minute
	for _, c := range []struct {
		total, elapsed time.Duration
		left           int
		meas, sim      time.Duration
	}{
		{23 * m, 0, 15, 23*m/15 - 23*m/75, 23 * m / 75},
		{23 * m, 20 * m, 1, 144 * time.Second, 36 * time.Second}, // the last preset gets what is left
		{60 * m, 0, 2, 29 * m, m},                                // a simulation gets at most a minute
		{23 * m, 30 * m, 3, time.Second, time.Second},            // past the total: first looks only
		{0, 0, 15, 0, 0}, // no budget: no --until-settled
	} {
		meas, sim := budgets(c.total, c.elapsed, c.left)
		if meas != c.meas || sim != c.sim {
			t.Errorf("budgets(%s, %s, %d) = %s, %s; want %s, %s", c.total, c.elapsed, c.left, meas, sim, c.meas, c.sim)
		}
	}
	if got := settled(90*time.Second, "run", "f04-single-thread", "--quick"); !slices.Equal(got, []string{"run", "f04-single-thread", "--quick", "--until-settled", "--budget", "1m30s"}) {
		t.Errorf("settled: %v", got)
	}
	if got := settled(0, "sim", "f04-single-thread"); !slices.Equal(got, []string{"sim", "f04-single-thread"}) {
		t.Errorf("settled without a budget: %v", got)
	}
}

// TestCellSaysHowItSettled: a row run until settled says how many repeats
// it took and why it stopped.
func TestCellSaysHowItSettled(t *testing.T) {
	v := &verdict.Verdict{Finding: "F12", Outcome: verdict.Inconclusive, Numbers: "n", Repeats: 14,
		Settle: &verdict.Settling{Repeats: 14, Reason: "interval stopped shrinking", Words: "interval stopped shrinking after 14 repeats: still inconclusive", Budget: "1m0s"}}
	c := cell(outcome{verdict: v})
	if !strings.Contains(c, "Repeats: interval stopped shrinking after 14 repeats: still inconclusive (budget 1m0s)") {
		t.Errorf("cell %q does not say how it settled", c)
	}
}
