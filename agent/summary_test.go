package agent

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/testenv"
)

// bursty returns n samples 10 ms apart (jittered by up to 1 ms) of a group
// whose work comes in bursts: each sample a 5 ms burst of 1-3 threads starts
// with probability pBurst, over a trickle.
func bursty(seed uint64, n int, pBurst float64) (at, usage []time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 7))
	at, usage = make([]time.Duration, n), make([]time.Duration, n)
	var u time.Duration
	for i := 1; i < n; i++ {
		at[i] = time.Duration(i)*10*time.Millisecond + time.Duration(rng.IntN(1000))*time.Microsecond
		if rng.Float64() < pBurst {
			u += time.Duration(1+rng.IntN(3)) * 5 * time.Millisecond
		}
		u += time.Duration(rng.IntN(300)) * time.Microsecond
		usage[i] = u
	}
	return at, usage
}

func testConfig() *SummaryConfig {
	c := &SummaryConfig{Window: time.Hour, Block: 5 * time.Minute, Chunk: time.Minute}
	c.defaults(4000)
	return c
}

// periodic is n samples of a sched-bench-like group: two threads busy for
// 200 ms every 2 s (jittered by up to 1 ms), idle between.
func periodic(n int) (at, usage []time.Duration) {
	rng := rand.New(rand.NewPCG(9, 9))
	at, usage = make([]time.Duration, n), make([]time.Duration, n)
	var u time.Duration
	for i := 1; i < n; i++ {
		at[i] = time.Duration(i)*10*time.Millisecond + time.Duration(rng.IntN(1000))*time.Microsecond
		if i%200 < 20 {
			u += 20 * time.Millisecond
		}
		u += time.Duration(rng.IntN(100)) * time.Microsecond
		usage[i] = u
	}
	return at, usage
}

// TestSummaryAgreesWithAdvise feeds the same samples to the summary and to
// advise's replay and compares every ladder point and the recommendation.
func TestSummaryAgreesWithAdvise(t *testing.T) {
	testenv.Arithmetic(t)
	t.Run("bursty", func(t *testing.T) {
		at, usage := bursty(1, 10*60*100, 0.35)
		agreesWithAdvise(t, at, usage)
	})
	t.Run("periodic", func(t *testing.T) {
		at, usage := periodic(10 * 60 * 100)
		agreesWithAdvise(t, at, usage)
	})
}

func agreesWithAdvise(t *testing.T, at, usage []time.Duration) {
	cfg := testConfig()
	s := NewSummary(cfg)
	for i := range at {
		s.AddNow(at[i], usage[i])
	}
	s.replayFold(s.Flush()) // the open chunk too, so both saw the same samples
	d := cfs.FromSamples(at, usage)
	var points []advise.Point
	for _, l := range cfg.Ladder {
		points = append(points, advise.Point{LimitMilli: l, Period: cfg.Period}, advise.Point{LimitMilli: l, BurstMilli: l, Period: cfg.Period})
	}
	want, err := advise.Evaluate(d, points, advise.Options{})
	if err != nil {
		t.Fatal(err)
	}
	span, _ := s.Span()
	if math.Abs(span.Seconds()-d.Duration().Seconds()) > 0.01 {
		t.Fatalf("summary spans %s, advise %s", span, d.Duration())
	}
	throttledSomewhere := 0
	var worstThr, worstP99 float64
	defer func() { t.Logf("largest differences: throttled ratio %.4f, delay p99 %.2f ms", worstThr, worstP99) }()
	for i, w := range want {
		if float64(w.LimitMilli) < 1.2*d.MeanCores()*1000 {
			// Below the mean the backlog grows for as long as the replay
			// runs: advise's for 10 minutes, the summary's for a chunk.
			continue
		}
		got, err := s.Evaluate(w.LimitMilli, w.BurstMilli)
		if err != nil {
			t.Fatal(err)
		}
		if w.ThrottledRatio > 0.001 {
			throttledSomewhere++
		}
		worstThr = max(worstThr, math.Abs(got.ThrottledRatio-w.ThrottledRatio))
		worstP99 = max(worstP99, math.Abs(got.DelayP99Ms-w.DelayP99Ms))
		// The replay restarts every chunk (60 s, 600 periods): a few
		// periods at each restart may differ.
		if d := math.Abs(got.ThrottledRatio - w.ThrottledRatio); d > 0.005+0.03*w.ThrottledRatio {
			t.Errorf("point %d %s: throttled ratio %.4f, advise %.4f", i, points[i], got.ThrottledRatio, w.ThrottledRatio)
		}
		if d := math.Abs(got.DelayP99Ms - w.DelayP99Ms); d > 1+0.25*w.DelayP99Ms {
			t.Errorf("point %d %s: delay p99 %.2f ms, advise %.2f ms", i, points[i], got.DelayP99Ms, w.DelayP99Ms)
		}
		if d := math.Abs(got.Periods - w.Periods); d > 0.01*w.Periods+2 {
			t.Errorf("point %d %s: %.0f periods, advise %.0f", i, points[i], got.Periods, w.Periods)
		}
	}
	if throttledSomewhere < 5 {
		t.Fatalf("only %d points throttle: the demand does not test the model", throttledSomewhere)
	}
	// advise's recommendation also meets the target with the use
	// LevelSpread higher: the same samples, scaled.
	up := make([]time.Duration, len(usage))
	for i, u := range usage {
		up[i] = usage[0] + time.Duration(float64(u-usage[0])*(1+advise.LevelSpread))
	}
	higher, err := advise.Evaluate(cfs.FromSamples(at, up), points, advise.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []advise.Target{{MaxThrottled: 0.01}, {MaxThrottled: 0.05}, {MaxDelay: 5 * time.Millisecond}} {
		a, err := s.Advice(AdviceInput{Source: "test", Target: target})
		if err != nil {
			t.Fatal(err)
		}
		ref := advise.Decide(&advise.Evaluated{Evaluations: want, Higher: higher, Period: cfg.Period}, target).Recommendation
		if a.Recommendation.LimitMilli != ref.LimitMilli {
			// one ladder step apart at most
			lo, _ := bracket(cfg.Ladder, min(a.Recommendation.LimitMilli, ref.LimitMilli))
			_, hi := bracket(cfg.Ladder, max(a.Recommendation.LimitMilli, ref.LimitMilli))
			if hi-lo > 1 {
				t.Errorf("target %+v: agent advises %dm, advise %dm", target, a.Recommendation.LimitMilli, ref.LimitMilli)
			}
		}
		if !a.Recommendation.Met {
			t.Errorf("target %+v: not met on the ladder", target)
		}
	}
}

// TestSummaryWindowRolls checks that blocks older than the window are
// dropped and that memory stays bounded by the window.
func TestSummaryWindowRolls(t *testing.T) {
	cfg := &SummaryConfig{Window: 10 * time.Minute, Block: 2 * time.Minute, Chunk: time.Minute}
	cfg.defaults(2000)
	s := NewSummary(cfg)
	at, usage := bursty(2, 30*60*100, 0.2) // 30 minutes
	for i := range at {
		s.AddNow(at[i], usage[i])
	}
	if n := len(s.Blocks()); n > 6 {
		t.Fatalf("%d blocks held for a 10-minute window of 2-minute blocks", n)
	}
	span, _ := s.Span()
	if span < 9*time.Minute || span > 11*time.Minute {
		t.Fatalf("window holds %s of demand, want about 10 minutes", span)
	}
	if got := s.Blocks()[0].Start; got < 18*time.Minute {
		t.Fatalf("oldest block starts at %s: older than the window", got)
	}
	// A closed block keeps its points at their size: a day of them is
	// most of the agent's memory (BenchmarkAgentDay200).
	for _, b := range s.Blocks()[:len(s.Blocks())-1] {
		if len(b.Points) == 0 || cap(b.Points) > len(b.Points)+len(b.Points)/8 { // the allocator's size class, not append's room
			t.Errorf("closed block at %s holds %d points in room for %d", b.Start, len(b.Points), cap(b.Points))
		}
	}
}

// TestSummaryHoldsNoChunkHandedOn: the chunks AddCounts returns are the
// caller's; the summary keeps no pointer to them (it did, in the slice it
// reuses: a chunk per container, 5.6 MiB of a node's 200).
func TestSummaryHoldsNoChunkHandedOn(t *testing.T) {
	s := NewSummary(testConfig())
	at, usage := bursty(3, 3*60*100, 0.2) // 3 minutes
	handed := 0
	for i := range at {
		handed += len(s.AddCounts(at[i], usage[i], 0))
		for _, c := range s.done[len(s.done):cap(s.done)] {
			if c != nil {
				t.Fatalf("sample %d: the summary still holds a chunk it handed on", i)
			}
		}
	}
	if handed < 2 {
		t.Fatalf("%d chunks handed on over 3 minutes of 1-minute chunks", handed)
	}
}

// TestRecommenders checks krr's and the VPA's rules against advise's
// baselines on the same samples.
func TestRecommenders(t *testing.T) {
	cfg := testConfig()
	at, usage := bursty(3, 15*60*100, 0.3)
	s := NewSummary(cfg)
	for i := range at {
		s.AddNow(at[i], usage[i])
	}
	s.replayFold(s.Flush())
	d := cfs.FromSamples(at, usage)
	ref, err := advise.Advise(d, advise.Request{}, advise.Sampled{})
	if err != nil {
		t.Fatal(err)
	}
	r := s.Recommenders()
	for _, b := range ref.Baselines {
		var got int64
		switch b.Name {
		case "krr default":
			got = r.KrrMilli
		case "VPA target":
			got = r.VPAMilli
		default:
			continue
		}
		if b.Evaluation == nil {
			t.Fatalf("%s: advise has none", b.Name)
		}
		// advise steps its windows by 1 s, the summary by 15 s.
		if rel := math.Abs(float64(got-b.LimitMilli)) / float64(b.LimitMilli); rel > 0.05 {
			t.Errorf("%s: summary %dm, advise %dm", b.Name, got, b.LimitMilli)
		}
	}
}

func TestLadder(t *testing.T) {
	l := Ladder(2000)
	for _, m := range []int64{10, 100, 250, 500, 1000, 1500, 2000} {
		if lo, hi := bracket(l, m); lo != hi {
			t.Errorf("%dm is not on the ladder", m)
		}
	}
	for i := 1; i < len(l); i++ {
		if r := float64(l[i]) / float64(l[i-1]); l[i-1] >= 100 && r > 1.1251 {
			t.Errorf("%dm -> %dm: a step of %.0f%%", l[i-1], l[i], (r-1)*100)
		}
	}
	if l[len(l)-1] != 2000 {
		t.Errorf("ladder for 2 CPUs ends at %dm", l[len(l)-1])
	}
}

// TestSummaryNoDemand: a summary with nothing replayed (a container seen for
// less than a chunk, maybe throttled meanwhile) says so rather than
// evaluating nothing as no throttling.
func TestSummaryNoDemand(t *testing.T) {
	s := NewSummary(testConfig())
	s.NoteThrottled(time.Second, 5)
	s.AddNow(time.Second, 0)
	s.AddNow(time.Second+10*time.Millisecond, time.Millisecond)
	if _, err := s.Evaluate(500, 0); !errors.Is(err, ErrNoDemand) {
		t.Fatalf("Evaluate: %v, want ErrNoDemand", err)
	}
	if _, err := s.Advice(AdviceInput{}); !errors.Is(err, ErrNoDemand) {
		t.Fatalf("Advice: %v, want ErrNoDemand", err)
	}
	if _, err := s.Evaluate(500, 600); err == nil || !strings.Contains(err.Error(), "burst") {
		t.Fatalf("a burst above the limit: %v", err)
	}
}

// TestBlockEvaluations: a window of a quiet stretch then a busy one has
// blocks that disagree, and the window's throttled share lies between them.
func TestBlockEvaluations(t *testing.T) {
	cfg := &SummaryConfig{Window: 10 * time.Minute, Block: 2 * time.Minute, Chunk: time.Minute}
	cfg.defaults(4000)
	s := NewSummary(cfg)
	quietAt, quietUse := bursty(5, 2*60*100, 0.05)
	busyAt, busyUse := bursty(6, 2*60*100+1, 0.4)
	for i := range quietAt {
		s.AddNow(quietAt[i], quietUse[i])
	}
	end, used := quietAt[len(quietAt)-1], quietUse[len(quietUse)-1]
	for i := 1; i < len(busyAt); i++ {
		s.AddNow(end+busyAt[i], used+busyUse[i])
	}
	s.replayFold(s.Flush())
	starts, evs, err := s.BlockEvaluations(500, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) < 2 || len(starts) != len(evs) {
		t.Fatalf("%d block evaluations", len(evs))
	}
	lo, hi := evs[0].ThrottledRatio, evs[len(evs)-1].ThrottledRatio
	w, _ := s.Evaluate(500, 0)
	t.Logf("throttled at 500m: first block %.3f, last %.3f, window %.3f", lo, hi, w.ThrottledRatio)
	if !(hi > lo+0.02) {
		t.Fatalf("a quiet block %.3f and a busy one %.3f: want them to disagree", lo, hi)
	}
	if w.ThrottledRatio < lo || w.ThrottledRatio > hi {
		t.Fatalf("window %.3f outside its blocks' %.3f..%.3f", w.ThrottledRatio, lo, hi)
	}
	if w.ThrottledRatioWorst < hi-1e-9 || w.ThrottledRatioBest > lo+1e-9 {
		t.Fatalf("window worst/best %.3f/%.3f, blocks %.3f..%.3f", w.ThrottledRatioWorst, w.ThrottledRatioBest, lo, hi)
	}
}

// burstsUnder is a one-thread group asked for a 50 ms burst every 397 ms
// (not a multiple of the period: every phase of the period comes, as with
// real arrivals; at 400 ms every burst met the same phase, and the summary,
// a phase per chunk, and advise, every phase over the window, sampled
// different phases of a response that, the burst served on one CPU,
// depends on the phase),
// sampled every 10 ms while the kernel held it to 20 ms a 100 ms period:
// its cumulative use and nr_throttled (1 ms steps of the bandwidth rule).
func burstsUnder(span time.Duration) (at, usage []time.Duration, thr []uint64) {
	const step = time.Millisecond
	var u, backlog, runtime time.Duration
	var n uint64
	held := false
	for t := time.Duration(0); t <= span; t += step {
		if t%(100*time.Millisecond) == 0 {
			if held { // counted at the refill, as the kernel's period timer does
				n++
			}
			runtime, held = 20*time.Millisecond, false
		}
		if t >= 37*time.Millisecond && (t-37*time.Millisecond)%(397*time.Millisecond) == 0 {
			backlog += 50 * time.Millisecond
		}
		if t%(10*time.Millisecond) == 0 {
			at, usage, thr = append(at, t), append(usage, u), append(thr, n)
		}
		run := min(step, backlog, runtime)
		u, backlog, runtime = u+run, backlog-run, runtime-run
		if backlog > 0 && runtime == 0 {
			held = true
		}
	}
	return at, usage, thr
}

// TestSummaryReconstructsThrottledDemand: samples taken under a limit that
// throttled go through the same reconstruction as advise's (AddCounts), so
// the summary predicts a higher limit from the bursts the kernel spread,
// not from the spread use, and agrees with cfs.Reconstruct's replay.
func TestSummaryReconstructsThrottledDemand(t *testing.T) {
	at, usage, thr := burstsUnder(10 * time.Minute)
	cfg := testConfig()
	s, plain := NewSummary(cfg), NewSummary(cfg)
	for i := range at {
		for _, c := range s.AddCounts(at[i], usage[i], thr[i]) {
			s.replayFold(c)
		}
		plain.AddNow(at[i], usage[i])
	}
	s.backlog.Flush(s.emit) // the samples ended: what the reconstruction held goes in as used
	for _, sum := range []*ContainerSummary{s, plain} {
		if c := sum.Flush(); c != nil {
			sum.replayFold(c)
		}
	}
	if moved, capped := s.Backlog(); moved == 0 || capped != 0 {
		t.Fatalf("moved %s, capped %s", moved, capped)
	}
	rec, _ := cfs.Reconstruct(cfs.FromSamples(at, usage), thr, cfg.Period)
	want, err := advise.Evaluate(rec, []advise.Point{{LimitMilli: 450, Period: cfg.Period}}, advise.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Evaluate(450, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen, err := plain.Evaluate(450, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("at 450m: summary %.3f, advise on the reconstruction %.3f, summary of the use alone %.3f", got.ThrottledRatio, want[0].ThrottledRatio, seen.ThrottledRatio)
	if want[0].ThrottledRatio < 0.15 || seen.ThrottledRatio > 0.05 {
		t.Fatalf("premise: reconstruction %.3f, use alone %.3f", want[0].ThrottledRatio, seen.ThrottledRatio)
	}
	if d := math.Abs(got.ThrottledRatio - want[0].ThrottledRatio); d > 0.005+0.03*want[0].ThrottledRatio {
		t.Errorf("summary %.4f, advise %.4f", got.ThrottledRatio, want[0].ThrottledRatio)
	}
}

// TestBacklogAccountOverTheWindow: the reconstruction's moved time is
// counted in the blocks it happened in, so once they leave the window the
// advice is no longer marked reconstructed (it counted since the agent
// started before).
func TestBacklogAccountOverTheWindow(t *testing.T) {
	at, usage, thr := burstsUnder(10 * time.Minute)
	cfg := &SummaryConfig{Window: 20 * time.Minute, Block: 5 * time.Minute, Chunk: time.Minute}
	cfg.defaults(4000)
	s := NewSummary(cfg)
	feed := func(a, u time.Duration, n uint64) {
		for _, c := range s.AddCounts(a, u, n) {
			s.replayFold(c)
		}
	}
	for i := range at {
		feed(at[i], usage[i], thr[i])
	}
	adv := func() *advise.Advice {
		as, err := s.AdviceFor(AdviceInput{Source: "test"}, []advise.Target{{}})
		if err != nil {
			t.Fatal(err)
		}
		return as[0]
	}
	if moved, _ := s.Backlog(); moved == 0 || !adv().Recommendation.Reconstructed {
		t.Fatalf("after the throttled bursts: moved %s, reconstructed %v: want both", moved, adv().Recommendation.Reconstructed)
	}
	// 30 minutes more of steady, unthrottled use (0.1 cores): the bursts'
	// blocks leave the 20-minute window.
	a, u, n := at[len(at)-1], usage[len(usage)-1], thr[len(thr)-1]
	for range 30 * 60 * 100 {
		a, u = a+10*time.Millisecond, u+time.Millisecond
		feed(a, u, n)
	}
	if moved, capped := s.Backlog(); moved != 0 || capped != 0 {
		t.Errorf("30 minutes later: moved %s, capped %s over a 20-minute window: want none", moved, capped)
	}
	if adv().Recommendation.Reconstructed {
		t.Error("30 minutes later: advice still marked reconstructed")
	}
}

// startingThenSteady is a one-thread group that starts with 600 ms of CPU
// at once (from 0.5 s: a runtime's initialisation, a calibration) and then
// asks for 20 ms every 397 ms over a trickle, n samples 10 ms apart, as
// sampled with no limit.
func startingThenSteady(n int) (at, usage []time.Duration) {
	at, usage = make([]time.Duration, n), make([]time.Duration, n)
	var u time.Duration
	for i := 1; i < n; i++ {
		at[i] = time.Duration(i) * 10 * time.Millisecond
		switch {
		case i > 50 && i <= 110:
			u += 9800 * time.Microsecond
		case i > 80 && (at[i]-time.Millisecond)%(397*time.Millisecond) < 20*time.Millisecond:
			u += 10 * time.Millisecond
		}
		u += 200 * time.Microsecond
		usage[i] = u
	}
	return at, usage
}

// TestStartupKeptApart: a start-up in the window's first block decides the
// limit when it is kept in (it needs nearly a whole CPU to keep its
// throttled periods within 1% of the block's; the steady bursts need a
// quarter); kept apart (SetStartup), the advice is the
// steady state's, the window holds the demand after it, and the start-up's
// own figures at the advised limit say what it will get.
func TestStartupKeptApart(t *testing.T) {
	cfg := &SummaryConfig{Window: 10 * time.Minute, Block: time.Minute, Chunk: 20 * time.Second}
	cfg.defaults(2000)
	at, usage := startingThenSteady(4 * 60 * 100)
	in := AdviceInput{Source: "test", Target: advise.Target{MaxThrottled: 0.01}}
	advice := func(startup time.Duration) (*ContainerSummary, *advise.Advice) {
		s := NewSummary(cfg)
		s.SetStartup(startup)
		for i := range at {
			s.AddNow(at[i], usage[i])
		}
		s.replayFold(s.Flush())
		a, err := s.Advice(in)
		if err != nil {
			t.Fatal(err)
		}
		return s, a
	}
	_, kept := advice(0)
	s, apart := advice(30 * time.Second)
	t.Logf("advised with the start-up kept in %dm, kept apart %dm", kept.Recommendation.LimitMilli, apart.Recommendation.LimitMilli)
	if kept.Recommendation.LimitMilli < 800 {
		t.Errorf("with the start-up in the window: %dm, want at least 800m (600 ms of one thread throttled in at most 1%% of the first block's 600 periods)", kept.Recommendation.LimitMilli)
	}
	if r := apart.Recommendation.LimitMilli; r < 200 || r > 400 {
		t.Errorf("with the start-up apart: %dm, want the steady 20 ms bursts' 200m-400m", r)
	}
	span, _ := s.Span()
	if want := 4*time.Minute - 30*time.Second; span < want-time.Second || span > want+time.Second {
		t.Errorf("the window holds %s, want %s (the start-up's 30 s apart)", span, want)
	}
	b := s.Startup()
	if b == nil || b.Span < 29*time.Second || b.Span > 31*time.Second {
		t.Fatalf("start-up block %+v, want 30 s", b)
	}
	if b.Work < float64(600*time.Millisecond) {
		t.Errorf("start-up work %.0f ms, want the 600 ms at once and more", b.Work/1e6)
	}
	if e := s.StartupEvaluation(apart.Recommendation.LimitMilli, 0); e == nil || e.ThrottledPeriods < 2 {
		t.Errorf("the start-up at the advised %dm: %+v, want it throttled in 2 periods or more", apart.Recommendation.LimitMilli, e)
	}
	found := false
	for _, w := range apart.Warnings {
		found = found || strings.Contains(w, "start-up kept apart")
	}
	if !found {
		t.Errorf("no start-up note in the warnings: %q", apart.Warnings)
	}
}

// TestSummaryWindowJudged: the agent's advice describes its window as
// advise's does (advise.Decide): a quiet stretch then a busy one is judged
// not stationary, the busy blocks marked, and said in the warnings; the
// same demand throughout is stationary.
func TestSummaryWindowJudged(t *testing.T) {
	cfg := &SummaryConfig{Window: 10 * time.Minute, Block: time.Minute, Chunk: 30 * time.Second}
	cfg.defaults(4000)
	in := AdviceInput{Source: "test", Target: advise.Target{MaxThrottled: 0.01}}
	feed := func(parts ...[2][]time.Duration) *advise.Advice {
		s := NewSummary(cfg)
		var end, used time.Duration
		for _, p := range parts {
			for i := 1; i < len(p[0]); i++ {
				s.AddNow(end+p[0][i], used+p[1][i])
			}
			end, used = end+p[0][len(p[0])-1], used+p[1][len(p[1])-1]
		}
		s.replayFold(s.Flush())
		a, err := s.Advice(in)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	quietAt, quietUse := bursty(5, 2*60*100+1, 0.05)
	busyAt, busyUse := bursty(6, 2*60*100+1, 0.4)
	a := feed([2][]time.Duration{quietAt, quietUse}, [2][]time.Duration{busyAt, busyUse})
	w := a.Window
	t.Logf("two regimes: %d blocks, stationary %v: %s", len(w.Blocks), w.Stationary, w.Nonstationary)
	if len(w.Blocks) != 4 || w.Seconds < 230 || w.Seconds > 241 || w.BlockSeconds <= 0 {
		t.Fatalf("window %.1f s in %d blocks of %.1f s, want 4 blocks over 4 minutes", w.Seconds, len(w.Blocks), w.BlockSeconds)
	}
	if w.Stationary || w.Blocks[0].Differs || !w.Blocks[3].Differs || w.WholeWindowLimitMilli <= 0 {
		t.Fatalf("a quiet then a busy stretch: stationary %v, blocks %+v", w.Stationary, w.Blocks)
	}
	found := false
	for _, x := range a.Warnings {
		found = found || strings.Contains(x, "not stationary")
	}
	if !found {
		t.Errorf("no non-stationarity warning: %q", a.Warnings)
	}
	steadyAt, steadyUse := bursty(7, 4*60*100+1, 0.2)
	if s := feed([2][]time.Duration{steadyAt, steadyUse}).Window; !s.Stationary || len(s.Blocks) != 4 {
		t.Fatalf("the same demand throughout: stationary %v in %d blocks: %s", s.Stationary, len(s.Blocks), s.Nonstationary)
	}
}
