package agreement

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/agent"
	"github.com/throttlelab/throttlelab/demand"
)

// warmDemand is burstDemand whose burst is warm for the first warmFor of
// span (a start-up: a JIT, class loading) and settled after.
func warmDemand(span, warmFor, warm, settled, offset time.Duration) (at, usage []time.Duration) {
	return periodicDemand(span, offset, func(k time.Duration) time.Duration {
		if k*100*time.Millisecond < warmFor {
			return warm
		}
		return settled
	})
}

// agentSummary is the agent's summary of a container's samples, fed as its
// sampler would (what /advice serves), with its first startup kept apart
// (0: the agent did not see it start).
func agentSummary(t *testing.T, at, usage []time.Duration, startup time.Duration) *agent.ContainerSummary {
	t.Helper()
	cfg := &agent.SummaryConfig{Window: time.Hour, Block: 2 * time.Minute, Chunk: time.Minute, Period: 100 * time.Millisecond,
		Phases: 10, Bucket: 15 * time.Second, Ladder: agent.Ladder(2000)}
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	sum := agent.NewSummary(cfg)
	sum.SetStartup(startup)
	fold := func(c *agent.Chunk) {
		if c == nil {
			return
		}
		r, err := cfg.Replay(c)
		if err != nil {
			t.Fatal(err)
		}
		sum.Fold(r)
	}
	for i := range at {
		fold(sum.Add(at[i], usage[i]))
	}
	fold(sum.Flush())
	return sum
}

// agentAdvice is the advice of agentSummary's summary.
func agentAdvice(t *testing.T, at, usage []time.Duration, target advise.Target, startup time.Duration) *advise.Advice {
	t.Helper()
	a, err := agentSummary(t, at, usage, startup).Advice(agent.AdviceInput{Source: "agent", Target: target})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// csvAdvice is advise --csv's advice on the samples, recorded as the CSV
// at csv: loaded and advised as the CLI does.
func csvAdvice(t *testing.T, at, usage []time.Duration, target advise.Target) (a *advise.Advice, csv string) {
	t.Helper()
	_, csv = recordDemand(t, at, usage)
	d, sampled, err := demand.Load(context.Background(), demand.Input{CSV: csv}, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	a, err = advise.Advise(d, advise.Request{Target: target}, sampled)
	if err != nil {
		t.Fatal(err)
	}
	return a, csv
}

// warned returns the first of a's warnings that contains what ("": none).
func warned(a *advise.Advice, what string) string {
	for _, w := range a.Warnings {
		if strings.Contains(w, what) {
			return w
		}
	}
	return ""
}

// TestStartupAgrees: a container whose first 20 s ask three times its
// settled use (60 ms bursts every 100 ms, then 20 ms), sampled for 5
// minutes from its start. advise finds the start-up in the data and leaves
// it out; the agent, which saw the container appear, keeps its first
// minute apart (Config.Startup, the default). Both must say a start-up was
// left out and recommend within one ladder step (25m) of each other, for
// the settled use (with the start-up in, the blocks that hold it would
// make the limit: the agent said 300m when its window's means took the
// start-up's buckets in). A start-up of 90 s outlasts the agent's minute:
// advise still leaves it out; the agent's window holds 30 s of it, and by
// advise's rule (advise.StartupOf over its 15 s means) it says so and how
// much to keep apart.
func TestStartupAgrees(t *testing.T) {
	target := advise.Target{MaxThrottled: 0.05}
	at, usage := warmDemand(5*time.Minute, 20*time.Second, 60*time.Millisecond, 20*time.Millisecond, 20*time.Millisecond)
	viaCSV, _ := csvAdvice(t, at, usage, target)
	viaAgent := agentAdvice(t, at, usage, target, time.Minute)
	for who, a := range map[string]*advise.Advice{"advise --csv": viaCSV, "the agent": viaAgent} {
		r := a.Recommendation
		t.Logf("%s: %dm over %.0f s (%s), %q", who, r.LimitMilli, a.Sampled.DurationSeconds, r.Basis, a.Warnings)
		if warned(a, "start-up") == "" || warned(a, "outlasted") != "" || !r.Met || r.LimitMilli > 300 {
			t.Errorf("%s recommends %dm (met %v), warnings %q: want the start-up left out and said, the settled use's limit", who, r.LimitMilli, r.Met, a.Warnings)
		}
	}
	if a, b := viaCSV.Recommendation.LimitMilli, viaAgent.Recommendation.LimitMilli; a < b-25 || a > b+25 {
		t.Errorf("advise --csv recommends %dm, the agent %dm: want within one ladder step (25m)", a, b)
	}

	at, usage = warmDemand(10*time.Minute, 90*time.Second, 60*time.Millisecond, 20*time.Millisecond, 20*time.Millisecond)
	viaCSV, _ = csvAdvice(t, at, usage, target)
	viaAgent = agentAdvice(t, at, usage, target, time.Minute)
	t.Logf("a 90 s start-up: advise --csv %dm, the agent %dm: %q", viaCSV.Recommendation.LimitMilli, viaAgent.Recommendation.LimitMilli, warned(viaAgent, "outlasted"))
	if w := warned(viaCSV, "start-up"); !strings.Contains(w, "the first 1m30s were a start-up") {
		t.Errorf("advise --csv on a 90 s start-up: %q", w)
	}
	if w := warned(viaAgent, "outlasted"); !strings.Contains(w, "the window's first 30s still look like it") || !strings.Contains(w, "keep at least 2m0s of a new container apart") {
		t.Errorf("the agent on a 90 s start-up, a minute kept apart: %q", viaAgent.Warnings)
	}
}
