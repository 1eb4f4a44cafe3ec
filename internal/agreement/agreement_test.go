package agreement

import (
	"context"
	"html"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/agent"
	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/demand"
	"github.com/throttlelab/throttlelab/fleet"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/report"
)

// burstDemand is one thread that runs burst at the start of every 100 ms
// (after an offset), sampled every 10 ms for span. Every 100 ms window holds
// the same work whatever its phase, so a limit throttles every period or
// none: where each path puts its grid and its phases cannot move the
// answer, only a rule can.
func burstDemand(span, burst, offset time.Duration) (at, usage []time.Duration) {
	return periodicDemand(span, offset, func(time.Duration) time.Duration { return burst })
}

// periodicDemand is one thread that runs burst(k) at the start of the k-th
// 100 ms period (after an offset), sampled every 10 ms for span.
func periodicDemand(span, offset time.Duration, burst func(k time.Duration) time.Duration) (at, usage []time.Duration) {
	const period, step = 100 * time.Millisecond, 10 * time.Millisecond
	var done time.Duration // work of the periods before k
	k := time.Duration(0)
	for t := time.Duration(0); t <= span; t += step {
		for (k+1)*period <= t {
			done += burst(k)
			k++
		}
		at, usage = append(at, t), append(usage, done+min(max(t-k*period-offset, 0), burst(k)))
	}
	return at, usage
}

// TestPathsAgree feeds 10 minutes of 27.5 ms bursts every 100 ms through
// every path and requires the same recommendation (300m: 275m is the use,
// and the advice also meets the target with 3% more) and the same
// throttled share at it, and, at a limit that throttles every period,
// check's prediction and advise's evaluation to be the same number.
func TestPathsAgree(t *testing.T) {
	at, usage := burstDemand(10*time.Minute, 27500*time.Microsecond, 20*time.Millisecond)
	target := advise.Target{MaxThrottled: 0.05}

	// advise --csv: the CSV the CLI reads, loaded and advised as it does.
	dir, csv := recordDemand(t, at, usage)
	d, sampled, err := demand.Load(context.Background(), demand.Input{CSV: csv}, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	viaCSV, err := advise.Advise(d, advise.Request{Target: target}, sampled)
	if err != nil {
		t.Fatal(err)
	}
	want := viaCSV.Recommendation
	if !want.Met || want.LimitMilli != 300 || want.ThrottledRatio != 0 || want.LowerBound {
		t.Fatalf("advise --csv recommends %dm (met %v, throttled %.3f, lower bound %v): want 300m, unthrottled: the demand does not test the paths",
			want.LimitMilli, want.Met, want.ThrottledRatio, want.LowerBound)
	}

	// The agent's summary, fed the samples as its sampler would: what
	// /advice serves.
	sum := agentSummary(t, at, usage, 0)
	viaAgent, err := sum.Advice(agent.AdviceInput{Source: "agent", Target: target})
	if err != nil {
		t.Fatal(err)
	}
	if r := viaAgent.Recommendation; r.LimitMilli != want.LimitMilli || r.ThrottledRatio != want.ThrottledRatio || r.Met != want.Met || r.LowerBound != want.LowerBound {
		t.Errorf("the agent recommends %dm (throttled %.4f, met %v, lower bound %v); advise --csv %dm (%.4f, %v, %v)",
			r.LimitMilli, r.ThrottledRatio, r.Met, r.LowerBound, want.LimitMilli, want.ThrottledRatio, want.Met, want.LowerBound)
	}

	// The agent itself, sampling a node whose containers use the same
	// demand: its /advice, over HTTP.
	doc := agentOverHTTP(t, at, usage, target, agent.SummaryConfig{Window: time.Hour, Block: 2 * time.Minute, Chunk: time.Minute})
	advised := 0
	for _, v := range doc.Containers {
		if v.Advice == nil {
			continue
		}
		advised++
		if r := v.Advice.Recommendation; r.LimitMilli != want.LimitMilli || r.ThrottledRatio != want.ThrottledRatio || r.Met != want.Met || r.LowerBound != want.LowerBound {
			t.Errorf("/advice for %s recommends %dm (throttled %.4f, met %v, lower bound %v); advise --csv %dm (%.4f, %v, %v)",
				v.Container, r.LimitMilli, r.ThrottledRatio, r.Met, r.LowerBound, want.LimitMilli, want.ThrottledRatio, want.Met, want.LowerBound)
		}
	}
	if advised == 0 {
		t.Errorf("/advice advises no container: %+v", doc)
	}

	// The knee, as a range of limits at 50%, 20% and 5% (the target):
	// every period throttles below 275m and none from it on, so each
	// path's range must hold 275m (advise's from its intervals, the
	// agent's from its ladder's estimates); the agent's summary and its
	// /advice must give the same ranges.
	for name, a := range map[string]*advise.Advice{"advise --csv": viaCSV, "the agent's summary": viaAgent} {
		kneeHolds(t, name, a, 275)
	}
	for _, v := range doc.Containers {
		if v.Advice != nil && !reflect.DeepEqual(v.Advice.Knee, viaAgent.Knee) {
			t.Errorf("/advice for %s gives the knee %+v; the agent's summary %+v", v.Container, v.Advice.Knee, viaAgent.Knee)
		}
	}

	// check, over the same demand recorded for a workload, at the advised
	// limit (passes) and at 250m (throttled in every period).
	ms := []fleet.ManifestContainer{
		{File: "web.yaml", Workload: fleet.Workload{Namespace: "shop", Kind: "Deployment", Name: "web"}, Container: "app", LimitMilli: want.LimitMilli},
		{File: "web.yaml", Workload: fleet.Workload{Namespace: "shop", Kind: "Deployment", Name: "web"}, Container: "app", LimitMilli: 250},
	}
	out, err := fleet.Check(context.Background(), ms, &fleet.Recorded{Dir: dir}, fleet.Budget{MaxThrottled: target.MaxThrottled})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].Skip != "" || out[1].Skip != "" {
		t.Fatalf("check: %+v", out)
	}
	if p := out[0].Prediction; len(out[0].Violations) > 0 || p.ThrottledRatio != want.ThrottledRatio {
		t.Errorf("check at the advised %dm: throttled %.4f, violations %q; advise says %.4f, within the target",
			want.LimitMilli, p.ThrottledRatio, out[0].Violations, want.ThrottledRatio)
	}
	at250, err := advise.Evaluate(d, []advise.Point{{LimitMilli: 250, Period: 100 * time.Millisecond}}, advise.Options{})
	if err != nil {
		t.Fatal(err)
	}
	agent250, err := sum.Evaluate(250, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p := out[1].Prediction; len(out[1].Violations) == 0 || p.ThrottledRatio != at250[0].ThrottledRatio || p.ThrottledRatio < 0.95 {
		t.Errorf("check at 250m: throttled %.4f, violations %q; advise evaluates %.4f: want the same, over the budget",
			p.ThrottledRatio, out[1].Violations, at250[0].ThrottledRatio)
	}
	// The agent replays a chunk at a time: the periods where a chunk
	// starts may count apart (a period in 600).
	if d := agent250.ThrottledRatio - at250[0].ThrottledRatio; d < -0.005 || d > 0.005 {
		t.Errorf("at 250m the agent predicts %.4f throttled, advise %.4f", agent250.ThrottledRatio, at250[0].ThrottledRatio)
	}

	// The reports' Advice section, over a run that recorded the demand as
	// one instance's usage.
	run := &record.Run{ID: "limits/unlimited/r0", Config: "unlimited", Instances: []string{"app-0"}}
	src := &report.Source{Label: "run", Runs: []*report.Run{{Run: run,
		Groups: []report.GroupUsage{{Name: record.InstanceGroup(0, "app-0"), At: at, Usage: usage}}}}}
	section := html.UnescapeString(string(report.AdviceSection([]*report.Source{src})))
	if ans := advise.Answer(viaCSV); !strings.Contains(section, ans) || !strings.Contains(ans, "Set the CPU limit to 300m") {
		t.Errorf("the report's section does not say advise's answer %q:\n%s", ans, section)
	}
}

// recordDemand writes the samples as recorded demand for the container app
// of the workload shop/web, DIR/shop/web/app.csv (advise's CSV, which check
// --demand DIR reads), and returns DIR and the file.
func recordDemand(t *testing.T, at, usage []time.Duration) (dir, csv string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "shop", "web"), 0o755); err != nil {
		t.Fatal(err)
	}
	csv = filepath.Join(dir, "shop", "web", "app.csv")
	fh, err := os.Create(csv)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := demand.WriteCSV(fh, cfs.FromSamples(at, usage)); err != nil {
		t.Fatal(err)
	}
	return dir, csv
}

// kneeHolds fails unless a's knee is given at 50%, 20% and 5% (the
// target), each range from at most crossMilli to at least it.
func kneeHolds(t *testing.T, name string, a *advise.Advice, crossMilli int64) {
	t.Helper()
	if len(a.Knee) != 3 {
		t.Fatalf("%s: knee %+v: want 50%%, 20%% and 5%%", name, a.Knee)
	}
	for i, share := range []float64{0.5, 0.2, 0.05} {
		k := a.Knee[i]
		if k.Share != share || k.Target != (share == 0.05) || k.NoUpperEnd || k.LowMilli > crossMilli || k.HighMilli < crossMilli {
			t.Errorf("%s: knee %+v: want %.0f%% from at most %dm to at least %dm", name, k, 100*share, crossMilli, crossMilli)
		}
	}
}
