package advise

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestJudgeRuntime: the recommended parallelism is set only where it moves
// the prediction beyond the intervals, for the better; within them, or for
// the worse, it is not.
func TestJudgeRuntime(t *testing.T) {
	own := RuntimePrediction{Parallelism: 8, Cores: 2, ThrottledRatio: 0.20, ThrottledRatioRange: &Range{0.15, 0.25}, DelayP99Ms: 40, DelayP99MsRange: &Range{30, 50}}
	for _, c := range []struct {
		name string
		rec  RuntimePrediction
		set  bool
		why  string
	}{
		{"within the intervals", RuntimePrediction{Parallelism: 1, Cores: 1, ThrottledRatio: 0.18, ThrottledRatioRange: &Range{0.12, 0.22}, DelayP99Ms: 35, DelayP99MsRange: &Range{25, 45}}, false, "the same"},
		{"better beyond them", RuntimePrediction{Parallelism: 1, Cores: 1, ThrottledRatio: 0.05, ThrottledRatioRange: &Range{0.03, 0.08}, DelayP99Ms: 38, DelayP99MsRange: &Range{30, 45}}, true, "less"},
		{"worse beyond them", RuntimePrediction{Parallelism: 1, Cores: 1, ThrottledRatio: 0.20, ThrottledRatioRange: &Range{0.15, 0.25}, DelayP99Ms: 90, DelayP99MsRange: &Range{70, 120}}, false, "keep 8"},
		{"fewer throttled, more delay", RuntimePrediction{Parallelism: 1, Cores: 1, ThrottledRatio: 0.05, ThrottledRatioRange: &Range{0.03, 0.08}, DelayP99Ms: 90, DelayP99MsRange: &Range{70, 120}}, false, "keep 8"},
	} {
		ra := &RuntimeAdvice{AtRecommended: 8, Recommended: 1, RecommendedSetting: "GOMAXPROCS=1", Predicted: []RuntimePrediction{own, c.rec}}
		set, why := judgeRuntime(ra)
		if set != c.set || !strings.Contains(why, c.why) {
			t.Errorf("%s: set %v (%s); want %v, saying %q", c.name, set, why, c.set, c.why)
		}
	}
	one := &RuntimeAdvice{AtRecommended: 2, Recommended: 2, Predicted: []RuntimePrediction{{Parallelism: 2, Cores: 2}}}
	if set, why := judgeRuntime(one); set || !strings.Contains(why, "nothing to set") {
		t.Errorf("one prediction: set %v (%s); want nothing to set", set, why)
	}
}

// TestJudgeRuntimeCountsQueueing: fewer threads that cut the throttling
// delay beyond the intervals, but make work wait for a thread longer than
// they save, trade throttling for queueing and are not recommended; where
// the wait is smaller than the saving they are.
func TestJudgeRuntimeCountsQueueing(t *testing.T) {
	own := RuntimePrediction{Parallelism: 8, Cores: 2, ThrottledRatio: 0.40, ThrottledRatioRange: &Range{0.35, 0.45}, DelayP99Ms: 90, DelayP99MsRange: &Range{80, 100}}
	rec := RuntimePrediction{Parallelism: 1, Cores: 1, ThrottledRatio: 0.10, ThrottledRatioRange: &Range{0.08, 0.12}, DelayP99Ms: 40, DelayP99MsRange: &Range{35, 45}}
	for _, c := range []struct {
		queue float64
		set   bool
		why   string
	}{{120, false, "trades throttling for queueing"}, {10, true, "counting the wait for a thread"}} {
		r := rec
		r.QueueP99Ms = c.queue
		ra := &RuntimeAdvice{AtRecommended: 8, Recommended: 1, RecommendedSetting: "GOMAXPROCS=1", Predicted: []RuntimePrediction{own, r}}
		set, why := judgeRuntime(ra)
		if set != c.set || !strings.Contains(why, c.why) {
			t.Errorf("queueing %g ms: set %v (%s); want %v, saying %q", c.queue, set, why, c.set, c.why)
		}
	}
}

// TestQueueAt: a demand that runs two threads at once (2 cores for 30 ms
// of every 100 ms) waits for one thread when bound to one: 60 ms of work
// in 30 ms, served in 60, so its last work waits about 30 ms; bound to two
// it does not wait.
func TestQueueAt(t *testing.T) {
	d := &Demand{Cores: 2}
	var u time.Duration
	for at := time.Duration(0); at <= 30*time.Second; at += 10 * time.Millisecond {
		d.At, d.Usage = append(d.At, at), append(d.Usage, u)
		if at%(100*time.Millisecond) < 30*time.Millisecond {
			u += 20 * time.Millisecond
		}
	}
	q, ok := queueAt(d, 1, Options{})
	if !ok || q < 15 || q > 45 {
		t.Errorf("bound to one thread: queueing p99 %.1f ms (%v), want about 30", q, ok)
	}
	if q, ok := queueAt(d, 2, Options{}); ok {
		t.Errorf("bound to its own two threads: queueing %.1f ms, want none", q)
	}
}

// TestRuntimeDelayBound: the runtime's predicted delays are called upper
// bounds where the demand was rebuilt from throttled samples, lower bounds
// where its throttled part was never seen, neither otherwise; the line says
// so.
func TestRuntimeDelayBound(t *testing.T) {
	for _, c := range []struct {
		rebuilt, lower bool
		bound, says    string
	}{
		{false, false, "", ""},
		{true, false, "upper", "delays at most"},
		{false, true, "lower", "delays at least"},
		{true, true, "", ""},
	} {
		r := Recommendation{Reconstructed: c.rebuilt, LowerBound: c.lower}
		r.LimitMilli = 500
		got := delayBound(r)
		ra := &RuntimeAdvice{Runtime: "go", Setting: "GOMAXPROCS", AtRecommended: 1, Recommended: 1, RecommendedSetting: "GOMAXPROCS=1",
			Predicted: []RuntimePrediction{{Parallelism: 1, Cores: 1, DelayP99Ms: 120}}, DelayBound: got}
		line := RuntimeLine(&Advice{Recommendation: r, Runtime: ra})
		if got != c.bound || c.says != "" && !strings.Contains(line, c.says) || c.says == "" && strings.Contains(line, "delays at") {
			t.Errorf("rebuilt %v, lower bound %v: bound %q, line %q; want %q saying %q", c.rebuilt, c.lower, got, line, c.bound, c.says)
		}
	}
}

// TestRuntimeAtFloor: under a limit below one CPU the value recommended to
// Go and to a JVM is 2, not the limit rounded up (one thread queues
// requests: f15-gomaxprocs), and 1 to a runtime without that floor; never
// more than the CPUs.
func TestRuntimeAtFloor(t *testing.T) {
	for _, c := range []struct {
		runtime   string
		cpus      int
		recMilli  int64
		want      int
		wantSpelt string
	}{
		{"go", 2, 470, 2, "N=2"},
		{"jvm", 2, 510, 2, "N=2"},
		{"node", 2, 470, 1, "N=1"},
		{"go", 1, 470, 1, "N=1"},
		{"go", 8, 2300, 3, "N=3"},
	} {
		f := &RuntimeFacts{Runtime: c.runtime, CPUs: c.cpus,
			Procs: func(float64) (int, string) { return 8, "set" },
			Spell: func(n int) string { return "N=" + strconv.Itoa(n) }}
		ra := RuntimeAt(f, 300, c.recMilli)
		if ra.Recommended != c.want || ra.RecommendedSetting != c.wantSpelt {
			t.Errorf("%s on %d CPUs under %dm: recommended %d (%q), want %d", c.runtime, c.cpus, c.recMilli, ra.Recommended, ra.RecommendedSetting, c.want)
		}
	}
}
