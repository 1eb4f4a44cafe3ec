package agreement

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/agent"
	"github.com/throttlelab/throttlelab/internal/cli"
)

// rampDemand is burstDemand whose burst grows linearly, from low in the
// first period to high in the last.
func rampDemand(span, low, high, offset time.Duration) (at, usage []time.Duration) {
	n := span / (100 * time.Millisecond)
	return periodicDemand(span, offset, func(k time.Duration) time.Duration { return low + (high-low)*k/max(n-1, 1) })
}

// levelWords is the level warning's measure of how far the next window's
// level may lie, and the basis's "with N% more use".
var (
	levelWords = regexp.MustCompile(`level moved within the window: .*a trend of ([+-]\d+)% a minute: the intervals and the recommendation take the use from (\d+)% lower to (\d+)% higher`)
	basisWords = regexp.MustCompile(`with (\d+)% more use`)
)

// levelOf returns what a's warnings and basis say of the level: the
// trend, how much lower and higher it may lie, and the basis's share
// ("" where it says none).
func levelOf(a *advise.Advice) (trend, low, high, basis string) {
	for _, w := range a.Warnings {
		if m := levelWords.FindStringSubmatch(w); m != nil {
			trend, low, high = m[1], m[2], m[3]
		}
	}
	if m := basisWords.FindStringSubmatch(a.Recommendation.Basis); m != nil {
		basis = m[1]
	}
	return trend, low, high, basis
}

// TestLevelAgrees feeds a demand whose level rises by a third over 4
// minutes (bursts every 100 ms growing from 24 to 32 ms, +7% a minute)
// through advise --csv (the library path and the command), the agent's
// summary and a real agent's /advice, and requires the same judgement of
// the level: one rule (advise.LevelOf) over advise's 1 s means and the
// agent's 15 s buckets. Each must warn that the level moved with the same
// trend and band (the use up to 21% higher where the trend leads), state
// that share in the recommendation's basis, judge the window's
// stationarity alike, and recommend within one ladder step (25m) of each
// other, above the mean use raised by that band. The agent with a flat 3%
// band, where its blocks decide, recommended 350m from its summary and
// 308m over /advice, with no warning and a basis of 3%: a path that keeps
// a rule of its own fails every one of these.
func TestLevelAgrees(t *testing.T) {
	at, usage := rampDemand(4*time.Minute, 24*time.Millisecond, 32*time.Millisecond, 20*time.Millisecond)
	target := advise.Target{MaxThrottled: 0.05}
	viaCSV, csv := csvAdvice(t, at, usage, target)
	trend, low, high, basis := levelOf(viaCSV)
	t.Logf("advise --csv: %dm, %q, stationary %v, trend %s%%/min, level -%s%%..+%s%%", viaCSV.Recommendation.LimitMilli, viaCSV.Recommendation.Basis, viaCSV.Window.Stationary, trend, low, high)
	if trend == "" || high == "" || basis != high {
		t.Fatalf("advise --csv: warnings %q, basis %q: want the level moved and the basis at its upper end", viaCSV.Warnings, viaCSV.Recommendation.Basis)
	}
	if h, _ := strconv.Atoi(high); h < 10 {
		t.Fatalf("advise --csv: the level up to %s%% higher: the demand does not test the band (want well above the 3%% floor)", high)
	}
	mean := viaCSV.Sampled.MeanCores * 1000
	hi, _ := strconv.ParseFloat(high, 64)
	if r := viaCSV.Recommendation; !r.Met || float64(r.LimitMilli) < mean*(1+hi/100) {
		t.Fatalf("advise --csv recommends %dm (met %v): want at least the mean %.0fm raised by %s%%", r.LimitMilli, r.Met, mean, high)
	}

	same := func(who string, a *advise.Advice) {
		t.Helper()
		tr, lo, h, b := levelOf(a)
		t.Logf("%s: %dm, %q, stationary %v, trend %s%%/min, level -%s%%..+%s%%", who, a.Recommendation.LimitMilli, a.Recommendation.Basis, a.Window.Stationary, tr, lo, h)
		if tr != trend || lo != low || h != high || b != basis {
			t.Errorf("%s: level trend %q, -%q%%..+%q%%, basis %q%%; advise --csv %q, -%q%%..+%q%%, %q%% (warnings %q)", who, tr, lo, h, b, trend, low, high, basis, a.Warnings)
		}
		if a.Window.Stationary != viaCSV.Window.Stationary {
			t.Errorf("%s: stationary %v, advise --csv %v", who, a.Window.Stationary, viaCSV.Window.Stationary)
		}
		if r, w := a.Recommendation.LimitMilli, viaCSV.Recommendation.LimitMilli; !a.Recommendation.Met || r < w-25 || r > w+25 {
			t.Errorf("%s recommends %dm (met %v); advise --csv %dm: want within one ladder step (25m)", who, r, a.Recommendation.Met, w)
		}
	}

	// The command, as a user types it.
	var stdout, stderr bytes.Buffer
	if code := cli.Run([]string{"advise", "--csv", csv, "-o", "json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("advise --csv -o json: exit %d\n%s", code, stderr.String())
	}
	var cmd advise.Advice
	if err := json.Unmarshal(stdout.Bytes(), &cmd); err != nil {
		t.Fatal(err)
	}
	same("the advise command", &cmd)

	// The agent's summary, fed the samples as its sampler would.
	viaAgent := agentAdvice(t, at, usage, target, 0)
	same("the agent's summary", viaAgent)

	// A real agent on a node whose containers use the demand: /advice.
	doc := agentOverHTTP(t, at, usage, target, agent.SummaryConfig{Window: time.Hour, Block: 2 * time.Minute, Chunk: time.Minute})
	advised := 0
	for _, v := range doc.Containers {
		if v.Advice != nil {
			advised++
			same("/advice for "+v.Container, v.Advice)
		}
	}
	if advised == 0 {
		t.Errorf("/advice advises no container: %+v", doc)
	}
}
