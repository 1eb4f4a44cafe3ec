package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/presets"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/settle"
)

// runOverhead is what a run costs beyond its warmup and load: starting
// the groups and the server, and writing the run (docs/methodology.md,
// "How make reproduce sets the budgets", has the measurement).
const runOverhead = time.Second

// countLoad is the length assumed for a load of a fixed count of requests
// whose length the spec does not say and whose count it does not give as
// a sample of tiles (docs/methodology.md has what such runs took).
const countLoad = 25 * time.Second

// perTile is the time assumed per tile of a load of a sample of tiles (f01
// to f03's quick variants): the slowest of the runs of 200 and 300 tiles
// the 2026-11-29 00:33 UTC run measured on the 2-core reference machine,
// 33 s for 300 (docs/methodology.md).
const perTile = 110 * time.Millisecond

// cost is what one repeat of a preset's quick variant is expected to take,
// and where the figure comes from.
type cost struct {
	perRepeat time.Duration
	from      string
	// first is the repeats of the first judging look: the quick spec's,
	// at least settle.MinJudge (0: 1).
	first int
}

// costOf is a preset's cost per repeat: measured in dir's last result
// (its time over its repeats) when there is one of the same quick spec,
// else estimated from the quick spec for a machine of cores CPUs (runs per
// repeat times warmup, load and runOverhead). A result of a spec that has
// changed since (its estimate differs) is not this spec's cost.
func costOf(p *presets.Preset, dir string, cores int) cost {
	e, _, err := p.Quick(cores)
	if err != nil {
		// Refused before it runs (presets.ErrNotFaithful): it costs
		// next to nothing.
		return cost{perRepeat: time.Second, from: "refused before it runs"}
	}
	est, first := estimate(e), max(e.Spec.Repeats, settle.MinJudge)
	if c, ok := measuredCost(dir); ok {
		if old, err := record.ReadSpec(dir); err == nil && estimate(old) == est {
			c.first = first
			return c
		}
	}
	return cost{perRepeat: est, from: "estimated from the spec", first: first}
}

// estimate is the time one repeat of e is expected to take.
func estimate(e *experiment.Experiment) time.Duration {
	var load time.Duration
	for _, l := range e.Spec.Loads {
		switch {
		case l.Duration.Duration > 0:
			load += l.Duration.Duration
		case !l.Ramp.IsZero():
			load += time.Duration(l.Ramp.Steps()) * l.Step.Duration
		case e.Spec.Workload.Tiles.Sample > 0:
			load += time.Duration(e.Spec.Workload.Tiles.Sample) * perTile
		default:
			load += countLoad
		}
	}
	runs := len(e.Spec.Configs) * len(e.Spec.Loads)
	return time.Duration(runs) * (e.Spec.Warmup.Duration + load + runOverhead)
}

// measuredCost is the time per repeat of the last result in dir.
func measuredCost(dir string) (cost, bool) {
	var rec provenance
	b, err := os.ReadFile(filepath.Join(dir, "reproduce.json"))
	if err != nil || json.Unmarshal(b, &rec) != nil || rec.Err != "" || rec.TookSec <= 0 {
		return cost{}, false
	}
	v := record.ReadVerdict(dir)
	if v == nil || v.Backend != "local" {
		return cost{}, false
	}
	n := max(v.Repeats, 1)
	return cost{perRepeat: time.Duration(rec.TookSec / float64(n) * float64(time.Second)), from: fmt.Sprintf("measured %s ago over %d repeats", time.Since(rec.Date).Round(time.Minute), n)}, true
}

// simBudget is a preset's simulation budget: a fifth of its part of what
// is left of the total (elapsed of it spent), that part in proportion to
// its cost per repeat (w) among the costs of the presets left (wLeft, its
// own included), at most simShare and at least a second: simulated
// repeats take seconds, and whatever the simulation takes comes out of
// the time after it (elapsed). A total of 0 is no budget (0): the spec's
// repeats, as before.
func simBudget(total, elapsed, w, wLeft time.Duration) time.Duration {
	if total <= 0 {
		return 0
	}
	left := max(total-elapsed, 0)
	s := time.Duration(float64(left) * float64(w) / float64(max(wLeft, w, 1)))
	return max(min(s/5, simShare), time.Second)
}

// plan writes, before anything runs, each preset's cost per repeat, where
// it comes from, and what its first judging look (the first round) would
// cost; then the first looks together and what is left of total for the
// further looks, which go one at a time to the open rows likeliest to
// settle soonest (pick). spent is what the budget had spent before (the
// build, with -since; 0 without it).
func plan(w io.Writer, ps []*presets.Preset, costs []cost, total, spent time.Duration) {
	var sum time.Duration
	for _, c := range costs {
		sum += c.perRepeat
	}
	fmt.Fprintf(w, "budget %s over %d presets on %d CPUs; one repeat of every preset: %s\n", total, len(ps), runtime.NumCPU(), sum.Round(time.Second))
	if spent > 0 {
		fmt.Fprintf(w, "spent before the first run (the build, with -since): %s\n", spent.Round(time.Second))
		total = max(total-spent, 0)
	}
	var firsts time.Duration
	for i, p := range ps {
		f := time.Duration(max(costs[i].first, 1)) * costs[i].perRepeat
		firsts += f
		fmt.Fprintf(w, "%-20s %8s per repeat (%s): first judging look %s\n", p.Name, costs[i].perRepeat.Round(time.Second), costs[i].from, f.Round(time.Second))
	}
	fmt.Fprintf(w, "the first judging look of every preset (%d repeats, or the spec's own when more): %s; left for further looks: %s\n",
		settle.MinJudge, firsts.Round(time.Second), max(total-firsts, 0).Round(time.Second))
}
