package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/presets"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/settle"
	"github.com/throttlelab/throttlelab/verdict"
)

// TestSimBudget gives the simulation a fifth of the preset's part of what
// is left, in proportion to its cost per repeat among the presets left,
// at most a minute and at least a second.
func TestSimBudget(t *testing.T) {
	m, s := time.Minute, time.Second
	for _, c := range []struct {
		name                  string
		total, elapsed, w, wl time.Duration
		sim                   time.Duration
	}{
		{"a third of the cost, a third of the time", 24 * m, 0, 10 * s, 30 * s, m}, // at most a minute
		{"the rest of the time", 24 * m, 20 * m, 40 * s, 40 * s, 48 * s},
		{"cheap preset", 24 * m, 0, 5 * s, 500 * s, 2880 * time.Millisecond},
		{"past the total", 23 * m, 30 * m, 10 * s, 30 * s, s},
		{"no budget", 0, 0, 10 * s, 30 * s, 0}, // no --until-settled
	} {
		if sim := simBudget(c.total, c.elapsed, c.w, c.wl); sim != c.sim {
			t.Errorf("%s: simBudget(%s, %s, %s, %s) = %s; want %s", c.name, c.total, c.elapsed, c.w, c.wl, sim, c.sim)
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
	if !strings.Contains(c, "Repeats: interval stopped shrinking after 14 repeats: still inconclusive") {
		t.Errorf("cell %q does not say how it settled", c)
	}
	c = cell(outcome{verdict: v, note: noTime(candidate{next: 68 * time.Second, toSettle: 4 * time.Minute}, 30*time.Second)})
	if !strings.Contains(c, "not enough time for this row: its next look takes about 1m8s and settling it about 4m0s, 30s of the budget was left") {
		t.Errorf("cell %q does not say the row ran out of time", c)
	}
}

// TestPick spends the next look on the open row likeliest to settle
// soonest whose next look fits in what is left, and on none when no next
// look fits; candidateOf reads a row stopped for its budget, and no other.
func TestPick(t *testing.T) {
	s := time.Second
	cands := []candidate{
		{row: 0, next: 60 * s, toSettle: 600 * s}, // F7-like: far from settled
		{row: 1, next: 70 * s, toSettle: 70 * s},  // one look likely settles it
		{row: 2, next: 20 * s, toSettle: 200 * s},
		{row: 3, next: 300 * s, toSettle: 50 * s}, // the least need, but its look is dear
	}
	for _, c := range []struct {
		left time.Duration
		want int
	}{
		{time.Hour, 3},
		{100 * s, 1},
		{65 * s, 2},
		{30 * s, 2},
		{10 * s, -1},
	} {
		if got := pick(cands, c.left); got != c.want {
			t.Errorf("pick with %s left = %d, want %d", c.left, got, c.want)
		}
	}
	open := func(reason string, out verdict.Reproduction, repeats, next, need int) outcome {
		return outcome{took: time.Duration(repeats) * 30 * s, verdict: &verdict.Verdict{Outcome: out, Repeats: repeats, RepeatsNeeded: need,
			Settle: &verdict.Settling{Reason: reason, Repeats: repeats, Next: next}}}
	}
	if c, ok := candidateOf(4, open("budget spent", verdict.Inconclusive, 3, 5, 11)); !ok || c.row != 4 || c.next != 60*s || c.toSettle != 240*s {
		t.Errorf("candidateOf a row needing 11 repeats at 3 with its next look at 5: %+v, %v; want next 1m, to settle 4m", c, ok)
	}
	// With its schedule known (1, 3, 5, 8, a pilot first), a need of 6 is
	// the look at 8.
	o := open("budget spent", verdict.Inconclusive, 3, 5, 6)
	o.verdict.Settle.First = 1
	if c, _ := candidateOf(0, o); c.toSettle != 150*s {
		t.Errorf("candidateOf a row needing 6 on the schedule 1, 3, 5, 8: to settle %s, want 2m30s (5 repeats to the look at 8)", c.toSettle)
	}
	// Needing fewer than the next look adds: the next look is the cost.
	if c, _ := candidateOf(0, open("budget spent", verdict.Inconclusive, 3, 5, 4)); c.toSettle != 60*s {
		t.Errorf("candidateOf a row needing 4 repeats: to settle %s, want its next look's 1m", c.toSettle)
	}
	for _, o := range []outcome{open("settled", verdict.Reproduced, 3, 0, 0), open("last look of the rule", verdict.Inconclusive, 8, 0, 20), open("budget spent", verdict.Reproduced, 3, 5, 0), {}} {
		if _, ok := candidateOf(0, o); ok {
			t.Errorf("a candidate from %+v", o.verdict)
		}
	}
}

// TestCostOf estimates a preset's cost per repeat from its quick spec, and
// takes the last result's time over its repeats when there is one of the
// same spec.
func TestCostOf(t *testing.T) {
	p, ok := presets.Lookup("f04-single-thread")
	if !ok {
		t.Fatal("no f04-single-thread")
	}
	dir := t.TempDir()
	// 2 configs, each 1 s of warmup, one 8 s step at 2 clients and a
	// second of overhead.
	if c := costOf(p, dir, 2); c.perRepeat != 20*time.Second || c.from != "estimated from the spec" {
		t.Errorf("costOf without a result = %+v, want 20s estimated from the spec", c)
	}
	b, _ := json.Marshal(provenance{Cmd: "throttlelab run f04-single-thread --quick", TookSec: 100, Date: time.Now()})
	if err := os.WriteFile(filepath.Join(dir, "reproduce.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := record.WriteVerdict(dir, &verdict.Verdict{Finding: "F4", Backend: "local", Repeats: 4, Outcome: verdict.Reproduced}); err != nil {
		t.Fatal(err)
	}
	// A result without its spec, or of another spec, is not this one's cost.
	if c := costOf(p, dir, 2); c.from != "estimated from the spec" {
		t.Errorf("costOf with a result without its spec = %+v, want the estimate", c)
	}
	e, _, err := p.Quick(2)
	if err != nil {
		t.Fatal(err)
	}
	e.Spec.Warmup.Duration += time.Second
	if err := record.WriteSpec(dir, e); err != nil {
		t.Fatal(err)
	}
	if c := costOf(p, dir, 2); c.from != "estimated from the spec" {
		t.Errorf("costOf with a result of a changed spec = %+v, want the estimate", c)
	}
	e.Spec.Warmup.Duration -= time.Second
	if err := record.WriteSpec(dir, e); err != nil {
		t.Fatal(err)
	}
	if c := costOf(p, dir, 2); c.perRepeat != 25*time.Second || !strings.HasPrefix(c.from, "measured") {
		t.Errorf("costOf with a result of 4 repeats in 100 s = %+v, want 25s measured", c)
	}
}

// TestSecondRound: only a row stopped for its budget has a next look, of
// the repeats its schedule said; again keeps the directory and says both
// commands and their time together.
func TestSecondRound(t *testing.T) {
	st := func(reason string, repeats, next int) outcome {
		return outcome{took: 90 * time.Second, verdict: &verdict.Verdict{Repeats: repeats,
			Settle: &verdict.Settling{Reason: reason, Repeats: repeats, Next: next}}}
	}
	for _, c := range []struct {
		name string
		o    outcome
		want int
	}{
		{"budget spent after the pilot", st("budget spent", 1, 3), 2},
		{"budget spent later", st("budget spent", 5, 8), 3},
		{"stalled", st("interval stopped shrinking", 8, 0), 0},
		{"settled", st("settled", 3, 0), 0},
		{"no verdict", outcome{}, 0},
	} {
		if got := nextLook(c.o); got != c.want {
			t.Errorf("%s: nextLook = %d, want %d", c.name, got, c.want)
		}
	}
	if got := perRepeatOf(st("budget spent", 3, 5)); got != 30*time.Second {
		t.Errorf("perRepeatOf 3 repeats in 90s = %s, want 30s", got)
	}
	dir := t.TempDir()
	keep := filepath.Join(dir, "kept")
	if err := os.WriteFile(keep, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	prev := outcome{cmd: "throttlelab run f04-single-thread --quick", took: time.Minute}
	o := again("true", dir, prev, "run", "--resume", dir)
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("again removed the results: %v", err)
	}
	if o.cmd != "throttlelab run f04-single-thread --quick, then throttlelab run --resume "+dir || o.took < time.Minute || o.err != "" {
		t.Errorf("again: cmd %q, took %s, err %q", o.cmd, o.took, o.err)
	}
	if p := load(dir); p.cmd != o.cmd {
		t.Errorf("reproduce.json says %q, want %q", p.cmd, o.cmd)
	}
}

// TestRejudge judges a stored measured run (F14's committed quick run)
// again without writing: the ratio is on the log scale, the priors given
// (a prior of its machine and design) are the ones it judges with, its
// cell saying whether it pooled, and the
// listing gives the stored and the new verdict with the linear interval
// beside.
func TestRejudge(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "f14-pinning")
	if err := os.CopyFS(run, os.DirFS("../testdata/f14-quick")); err != nil {
		t.Fatal(err)
	}
	stored := &verdict.Verdict{Preset: "f14-pinning", Finding: "F14", Outcome: verdict.Inconclusive, Repeats: 3,
		Settle: &verdict.Settling{Reason: "budget spent", Repeats: 3, Looks: 2, First: 1, Next: 5}}
	if err := record.WriteVerdict(run, stored); err != nil {
		t.Fatal(err)
	}
	r, err := presets.ReadResults(run)
	if err != nil {
		t.Fatal(err)
	}
	pr := settle.Prior{SD: 0.05, DF: 20, Repeats: 24, Date: "2026-11-29", Source: "test", Scale: settle.LogScale}
	sets := []presets.Priors{{Machine: presets.MachineOf(r.Env), Quick: true, Runs: []time.Time{r.Env.Started.Add(time.Hour)},
		Presets: map[string]map[string]settle.Prior{"f14-pinning": {"p99 pinned / shared": pr}}, Designs: map[string]string{"f14-pinning": presets.DesignOf(r.Spec)}}}
	rows, err := rejudgeAll(dir, sets)
	if err != nil || len(rows) != 1 {
		t.Fatalf("rejudgeAll: %d rows, %v", len(rows), err)
	}
	var ratio *verdict.Condition
	for i, c := range rows[0].now.Conditions {
		if c.Name == "p99 pinned / shared" {
			ratio = &rows[0].now.Conditions[i]
		}
	}
	if ratio == nil || !ratio.LogScale || ratio.Pooled == "" || ratio.CISettle == nil {
		t.Fatalf("the ratio judged again: %+v", ratio)
	}
	var b strings.Builder
	printRejudged(&b, dir, rows)
	for _, want := range []string{"F14 f14-pinning (3 repeats", "stored inconclusive, now ", "on the log scale", "  linear: [", "the t interval of the ratios themselves without a prior"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("listing lacks %q:\n%s", want, b.String())
		}
	}
	if v := record.ReadVerdict(run); v.Outcome != verdict.Inconclusive || v.Conditions != nil {
		t.Errorf("rejudge wrote the verdict: %+v", v)
	}
}

// TestBudgetCountsTheBuild: with -since the budget counts from when make
// reproduce began, so the plan spends the build from it; a since that is
// not the start of this make reproduce is refused with what to give.
func TestBudgetCountsTheBuild(t *testing.T) {
	now := time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	if got, err := budgetStart(0, now); err != nil || !got.Equal(now) {
		t.Errorf("budgetStart(0) = %s, %v; want now", got, err)
	}
	began := now.Add(-95 * time.Second)
	if got, err := budgetStart(began.Unix(), now); err != nil || !got.Equal(began) {
		t.Errorf("budgetStart(95 s ago) = %s, %v; want %s", got, err, began)
	}
	for _, bad := range []time.Time{now.Add(time.Hour), now.Add(-48 * time.Hour)} {
		if _, err := budgetStart(bad.Unix(), now); err == nil || !strings.Contains(err.Error(), "date +%s") {
			t.Errorf("budgetStart(%s): %v; want an error saying what to give", bad, err)
		}
	}
	ps := presets.All()[:2]
	costs := []cost{{perRepeat: 10 * time.Second, from: "a", first: 3}, {perRepeat: 20 * time.Second, from: "b", first: 3}}
	var b strings.Builder
	plan(&b, ps, costs, 10*time.Minute, 95*time.Second)
	out := b.String()
	// 10 min, less the 95 s before, less the first looks' 90 s: 6m55s.
	for _, want := range []string{"spent before the first run (the build, with -since): 1m35s", "first judging look of every preset (3 repeats, or the spec's own when more): 1m30s; left for further looks: 6m55s"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan does not say %q:\n%s", want, out)
		}
	}
	b.Reset()
	plan(&b, ps, costs, 10*time.Minute, 0)
	if out := b.String(); strings.Contains(out, "spent before") || !strings.Contains(out, "left for further looks: 8m30s") {
		t.Errorf("plan without -since:\n%s", out)
	}
}
