package agent

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/testenv"
)

// byNeedTargets are the targets the accuracy test advises for.
var byNeedTargets = []advise.Target{{MaxThrottled: 0.01}, {MaxThrottled: 0.05}, {MaxDelay: 5 * time.Millisecond}}

// summarise feeds samples taken every 10 ms (at nominal instants i x 10 ms,
// as the agent's clock stamps them) to a summary, replaying each chunk as it
// closes. With h, it reads them as the agent samples by need (one
// container, no cap): at the grid's instants (SummaryConfig.OnGrid), and at
// every instant while need.wants it; it returns the share of instants read
// and each chunk's replay.
func summarise(cfg *SummaryConfig, h *HotConfig, usage []time.Duration, thr []uint64) (*ContainerSummary, float64, []*Replayed) {
	return summariseEach(cfg, h, usage, thr, nil)
}

// summariseEach is summarise calling each, if not nil, with every chunk
// before it is replayed.
func summariseEach(cfg *SummaryConfig, h *HotConfig, usage []time.Duration, thr []uint64, each func(*Chunk)) (*ContainerSummary, float64, []*Replayed) {
	s := NewSummary(cfg)
	var n need
	hot, read := true, 0
	var replayed []*Replayed
	replay := func(c *Chunk) {
		if each != nil {
			each(c)
		}
		r, err := cfg.Replay(c)
		if err != nil {
			panic(err)
		}
		replayed = append(replayed, r)
		s.Fold(r)
	}
	for i := range usage {
		at := time.Duration(i) * 10 * time.Millisecond
		grid := cfg.OnGrid(at, 0)
		if h != nil && i > 0 && !grid && !hot {
			continue
		}
		read++
		var th uint64
		if thr != nil {
			th = thr[i]
		}
		for _, c := range s.AddCounts(at, usage[i], th) {
			replay(c)
			n.floor.Store(s.lowestPick(byNeedTargets))
		}
		if h != nil {
			hot, _ = n.wants(h, cfg.Period, at, uint64(usage[i]), th, grid, false)
		}
	}
	// The samples ended: what the backlog reconstruction still holds (about
	// the last period, read at 10 ms or on the grid) goes in as used, so that
	// both ways of reading end their last chunk at the same sample.
	clear(s.done)
	s.done = s.done[:0]
	s.backlog.Flush(s.emit)
	for _, c := range s.done {
		replay(c)
	}
	if c := s.Flush(); c != nil {
		replay(c)
	}
	return s, float64(read) / float64(len(usage)), replayed
}

// tile repeats a recording's 10 ms steps until it holds n samples.
func tile(usage []time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := 1; i < n; i++ {
		j := (i-1)%(len(usage)-1) + 1
		out[i] = out[i-1] + usage[j] - usage[j-1]
	}
	return out
}

// recorded reads the first group's cumulative usage (ns, second column)
// from a usage CSV with a header line.
func recorded(t *testing.T, path string) []time.Duration {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Duration
	for i, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(l, ",")
		if i == 0 || strings.HasPrefix(l, "#") || len(f) < 2 {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue // the header
		}
		out = append(out, time.Duration(v))
	}
	if len(out) < 100 {
		t.Fatalf("%s: %d samples", path, len(out))
	}
	return out
}

// TestByNeedAgreesWithTenMillisecondSampling: the same demands summarised
// from every 10 ms sample (the 10 ms design) and as the agent samples by
// need (100 ms on the grid, 10 ms while hot): at every ladder limit, with
// and without a burst, the throttled share within 0.005 and the delay
// quantiles never below; the advice for three targets the same ladder
// limit or one step higher. The demands: random bursty ones, a
// sched-bench-like periodic one, the rig's burner under 200m (throttled:
// rebuilt from nr_throttled), and two recordings (report's fixture run of
// the workload server, advise's e2e fixture), each tiled to 10 minutes.
func TestByNeedAgreesWithTenMillisecondSampling(t *testing.T) {
	testenv.Arithmetic(t)
	const n = 10*60*100 + 1 // the last sample on a chunk boundary, read either way
	type demand struct {
		name  string
		usage []time.Duration
		thr   []uint64
	}
	var demands []demand
	for _, p := range []struct {
		seed uint64
		p    float64
	}{{1, 0.35}, {2, 0.05}, {3, 0.01}, {4, 0.15}} {
		_, u := bursty(p.seed, n, p.p)
		demands = append(demands, demand{name: fmt.Sprintf("bursty-%d-%.2f", p.seed, p.p), usage: u})
	}
	_, u := periodic(n)
	demands = append(demands, demand{name: "periodic", usage: u})
	_, u, thr := burstsUnder(10 * time.Minute)
	demands = append(demands, demand{name: "rig-burner-under-200m", usage: u, thr: thr})
	demands = append(demands, demand{name: "server-run", usage: tile(recorded(t, "../report/testdata/limits/runs/unlimited/load0/r1/usage.csv"), n)})
	demands = append(demands, demand{name: "advise-fixture", usage: tile(recorded(t, "../cmd/throttlelab/testdata/advise-usage.csv"), n)})
	demands = append(demands, demand{name: "episode-then-trickle", usage: episodic(n)}, demand{name: "rare-spikes", usage: spikes(n)})
	def := HotConfig{}
	def.defaults()
	// the default, and one that leaves containers cold sooner (the bounds
	// must hold whatever is read at 10 ms)
	eager := HotConfig{Margin: 0.05, Hold: 10 * time.Second}
	eager.defaults()
	for _, d := range demands {
		for _, h := range []HotConfig{def, eager} {
			t.Run(fmt.Sprintf("%s/margin=%.2f,hold=%s", d.name, h.Margin, h.Hold), func(t *testing.T) { agreesByNeed(t, &h, d.usage, d.thr) })
		}
	}
}

// episodic is n samples of a group bursty (as bursty's, 35%) for its
// first fifth, a trickle of 3% of a core after.
func episodic(n int) []time.Duration {
	_, u := bursty(5, n/5, 0.35)
	out := make([]time.Duration, n)
	copy(out, u)
	for i := len(u); i < n; i++ {
		out[i] = out[i-1] + 300*time.Microsecond
	}
	return out
}

// spikes is n samples of a trickle (2% of a core) with one burst of two
// threads for 300 ms every 170 s.
func spikes(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := 1; i < n; i++ {
		out[i] = out[i-1] + 200*time.Microsecond
		if i%17000 >= 8000 && i%17000 < 8030 {
			out[i] += 20 * time.Millisecond
		}
	}
	return out
}

// eachPointPair calls fn with each point's evaluation in each chunk at
// 10 ms (fine) and by need (coarse), paired by point; a point missing by
// need (neither throttled nor delayed there) pairs with a zero evaluation.
func eachPointPair(fine, coarse []*Replayed, fn func(k int, fe, ce advise.Evaluation)) {
	for k, f := range fine {
		c := coarse[k]
		if f == nil || c == nil {
			continue
		}
		at := map[int32]advise.Evaluation{}
		for i, key := range c.keys {
			at[key] = c.evs[i]
		}
		for i, key := range f.keys {
			fn(k, f.evs[i], at[key])
		}
	}
}

// agreesByNeed compares the summaries of one demand read every 10 ms and
// by need (TestByNeedAgreesWithTenMillisecondSampling).
func agreesByNeed(t *testing.T, h *HotConfig, usage []time.Duration, thr []uint64) {
	cfg := testConfig()
	fine, _, fineChunks := summarise(cfg, nil, usage, thr)
	coarse, share, coarseChunks := summarise(cfg, h, usage, thr)
	// Each chunk's replay: the same throttled periods, and delays (exact,
	// from its histogram) never below.
	if len(fineChunks) != len(coarseChunks) {
		t.Fatalf("%d chunks by need, %d at 10 ms", len(coarseChunks), len(fineChunks))
	}
	eachPointPair(fineChunks, coarseChunks, func(k int, fe, ce advise.Evaluation) {
		if math.Abs(ce.ThrottledPeriods-fe.ThrottledPeriods) > 1 {
			t.Errorf("chunk %d, %dm burst %dm: %.0f periods throttled by need, %.0f at 10 ms", k, fe.LimitMilli, fe.BurstMilli, ce.ThrottledPeriods, fe.ThrottledPeriods)
		}
		if ce.DelayP50Ms < fe.DelayP50Ms || ce.DelayP99Ms < fe.DelayP99Ms || ce.DelayMaxMs < fe.DelayMaxMs {
			t.Errorf("chunk %d, %dm burst %dm: delays p50/p99/max %.3f/%.3f/%.3f ms by need, below 10 ms's %.3f/%.3f/%.3f",
				k, fe.LimitMilli, fe.BurstMilli, ce.DelayP50Ms, ce.DelayP99Ms, ce.DelayMaxMs, fe.DelayP50Ms, fe.DelayP99Ms, fe.DelayMaxMs)
		}
	})
	var worstThr, worstP99 float64
	throttled := 0
	for i, l := range cfg.Ladder {
		for _, burst := range []int64{0, l} {
			f, err := fine.Evaluate(l, burst)
			if err != nil {
				t.Fatal(err)
			}
			c, err := coarse.Evaluate(l, burst)
			if err != nil {
				t.Fatal(err)
			}
			if f.ThrottledRatio > 0.001 {
				throttled++
			}
			worstThr = max(worstThr, math.Abs(c.ThrottledRatio-f.ThrottledRatio))
			worstP99 = max(worstP99, c.DelayP99Ms-f.DelayP99Ms)
			if math.Abs(c.ThrottledRatio-f.ThrottledRatio) > 0.005 {
				t.Errorf("point %d (%dm, burst %dm): throttled %.4f by need, %.4f at 10 ms", i, l, burst, c.ThrottledRatio, f.ThrottledRatio)
			}
			// Over the window: the blocks keep each point's delays as
			// knots (a zero share, eight quantiles, the maximum) merged
			// by work, which can move a quantile of the mixture a little
			// where each chunk's is not below (checked above): 1%.
			below := func(c, f float64) bool { return c < f*(1-0.01)-1e-6 }
			if below(c.DelayP50Ms, f.DelayP50Ms) || below(c.DelayP99Ms, f.DelayP99Ms) || below(c.DelayMaxMs, f.DelayMaxMs) {
				t.Errorf("point %d (%dm, burst %dm): delays p50/p99/max %.3f/%.3f/%.3f ms by need, below 10 ms's %.3f/%.3f/%.3f",
					i, l, burst, c.DelayP50Ms, c.DelayP99Ms, c.DelayMaxMs, f.DelayP50Ms, f.DelayP99Ms, f.DelayMaxMs)
			}
		}
	}
	var worst *ContainerSummary // the 10 ms design on the demand as read by need (asByNeed)
	for _, target := range byNeedTargets {
		fa, err := fine.Advice(AdviceInput{Source: "10ms", Target: target})
		if err != nil {
			t.Fatal(err)
		}
		ca, err := coarse.Advice(AdviceInput{Source: "by need", Target: target})
		if err != nil {
			t.Fatal(err)
		}
		fl, cl := fa.Recommendation.LimitMilli, ca.Recommendation.LimitMilli
		lo, _ := bracket(cfg.Ladder, fl)
		_, hi := bracket(cfg.Ladder, cl)
		if cl < fl {
			t.Errorf("target %+v: %dm by need, below 10 ms's %dm", target, cl, fl)
		} else if hi-lo > 1 {
			// More than one step higher: only where by need read the
			// periods that decide on the grid, and the 10 ms design
			// itself advises as high for the demand it cannot tell
			// from the recording (asByNeed).
			wl := int64(-1)
			if thr == nil {
				if worst == nil {
					worst, _, _ = summarise(cfg, nil, asByNeed(t, cfg, h, usage), nil)
				}
				wa, err := worst.Advice(AdviceInput{Source: "10ms, as read by need", Target: target})
				if err != nil {
					t.Fatal(err)
				}
				wl = wa.Recommendation.LimitMilli
			}
			wlo, _ := bracket(cfg.Ladder, wl)
			if wl < 0 || cl < wl || hi-wlo > 1 {
				t.Errorf("target %+v: %dm by need, %dm at 10 ms (%dm on the demand as read by need): want the same or one ladder step higher", target, cl, fl, wl)
			}
			t.Logf("target %+v: %dm by need, %dm at 10 ms, %dm at 10 ms on the demand as read by need", target, cl, fl, wl)
			continue
		}
		t.Logf("target %+v: %dm by need, %dm at 10 ms", target, cl, fl)
	}
	t.Logf("read %.1f%% of the instants; %d points throttled; largest differences: throttled share %.4f, p99 delay +%.2f ms", share*100, throttled, worstThr, worstP99)
}

// asByNeed is the demand as sampling by need with h replays it: every
// 10 ms instant of usage, each interval it read on the grid front-loaded at
// the chunk's parallelism bound (Chunk.demand), the rest as recorded. It
// has the recording's sums over every interval by need read, keeps within
// the bound, and by need reads it exactly as the recording: a demand the
// group could have asked for that by need cannot tell apart from it, and
// the worst such for delays. Where the periods that decide an advice were
// read on the grid, the 10 ms design's advice on it is what by need's must
// be held to: no figure from those readings can be lower and hold for both.
func asByNeed(t *testing.T, cfg *SummaryConfig, h *HotConfig, usage []time.Duration) []time.Duration {
	t.Helper()
	const step = 10 * time.Millisecond
	out := make([]time.Duration, len(usage))
	have := make([]bool, len(usage))
	have[0] = true
	var base time.Duration // usage at the chunk's first sample
	summariseEach(cfg, h, usage, nil, func(c *Chunk) {
		d, _ := c.demand(cfg)
		first := 1 // the prefill's end: the chunk's first sample
		if c.lead > 0 {
			first = 2
		}
		off := d.At[first] - c.start
		for i := first; i < len(d.At); i++ {
			at := d.At[i] - off
			if k := int(at / step); at%step == 0 && k < len(out) {
				out[k], have[k] = base+d.Usage[i]-d.Usage[first], true
			}
		}
		base += d.Usage[len(d.Usage)-1] - d.Usage[first]
	})
	// Instants inside a front-loaded interval after its work: idle.
	for k := 1; k < len(out); k++ {
		if !have[k] {
			out[k] = out[k-1]
		}
		// The grid's instants, which by need always reads: the
		// recording's use (to the counters' microsecond, as kept).
		if d := out[k] - (usage[k] - usage[0]); cfg.OnGrid(time.Duration(k)*step, 0) && (d > time.Microsecond || d < -time.Microsecond) {
			t.Fatalf("the demand as read by need is %s off the recording at %s", d, time.Duration(k)*step)
		}
	}
	return out
}

// TestLightDemandStaysCold is the hot rule on the demand of
// BenchmarkAgentRealRunBusy's light containers: a thread that runs 0.2 ms
// of CPU about every 100 ms (the light load until 2026-11-27; its wake-ups
// late by 0-5 ms, and now and then by up to 40 ms on a loaded host, so
// that two runs can fall within one period), or 50 us every second (the
// light load now), its advice's lowest pick the ladder's lowest, 10m (a
// threshold of 0.75 ms a period at the 25% margin), read on the node's
// grid while it is cold, for 10 minutes: it never asks to be hot. Nor
// does it at 0.8 ms a run, or at 0.2 ms with a run charged 0.6 ms more
// once (what the kernel charges a thread for time it did not run, such as
// an interrupt's, or a vCPU stolen while it spun): those periods come
// within the margin of the 10m pick but stay under HotConfig.MinCores (5
// ms). Without MinCores (the margin alone, the rule before 2026-11-27)
// both do (the margin can fire here: a single period over the threshold is
// what held a light container hot for HotConfig.Hold), and with MinCores
// a thread at 6 ms a run does.
func TestLightDemandStaysCold(t *testing.T) {
	cfg := SummaryConfig{}
	cfg.defaults(2000)
	def := HotConfig{}
	def.defaults()
	marginOnly := HotConfig{MinCores: 1e-9}
	marginOnly.defaults()
	ms := time.Millisecond
	run := func(h HotConfig, seed uint64, busy, cycle, extra time.Duration) (wanted int, why hotWhy) {
		rng := rand.New(rand.NewPCG(seed, 4))
		var n need
		n.floor.Store(10)
		var usage time.Duration
		next := time.Duration(rng.Int64N(int64(cycle))) // the thread's first run
		extraAt := 5 * time.Minute
		hot := false
		for at := time.Duration(0); at < 10*time.Minute; at += 10 * ms {
			for next <= at {
				usage += busy
				if extra > 0 && next >= extraAt {
					usage, extra = usage+extra, 0
				}
				late := time.Duration(rng.IntN(5000)) * time.Microsecond
				if rng.IntN(50) == 0 {
					late = time.Duration(rng.IntN(40)) * ms
				}
				next += cycle + late
			}
			onGrid := cfg.OnGrid(at, 0)
			if !hot && !onGrid {
				continue // cold: read on the grid only
			}
			want, _ := n.wants(&h, cfg.Period, at, uint64(usage), 0, onGrid, false)
			if want {
				wanted++
			}
			hot = want
		}
		return wanted, n.why
	}
	for seed := range uint64(4) {
		for _, h := range []HotConfig{def, marginOnly} {
			if w, why := run(h, seed, 200*time.Microsecond, 100*ms, 0); w != 0 {
				t.Errorf("seed %d, MinCores %g: 0.2 ms a run asked to be hot at %d samples: %s", seed, h.MinCores, w, why)
			}
			if w, why := run(h, seed, 50*time.Microsecond, time.Second, 0); w != 0 {
				t.Errorf("seed %d, MinCores %g: 50 us a second asked to be hot at %d samples: %s", seed, h.MinCores, w, why)
			}
		}
		if w, why := run(def, seed, 800*time.Microsecond, 100*ms, 0); w != 0 {
			t.Errorf("seed %d: 0.8 ms a run asked to be hot at %d samples under MinCores: %s", seed, w, why)
		}
		if w, why := run(def, seed, 200*time.Microsecond, 100*ms, 600*time.Microsecond); w != 0 {
			t.Errorf("seed %d: 0.2 ms a run with one charged 0.6 ms more asked to be hot at %d samples under MinCores: %s", seed, w, why)
		}
		if w, why := run(def, seed, 6*ms, 100*ms, 0); w == 0 || why.sums == 0 {
			t.Errorf("seed %d: 6 ms a run never asked to be hot: %s", seed, why)
		}
		if w, why := run(marginOnly, seed, 800*time.Microsecond, 100*ms, 0); w == 0 || why.sums == 0 {
			t.Errorf("seed %d: 0.8 ms a run never asked to be hot by the margin alone: %s", seed, why)
		}
		w, why := run(marginOnly, seed, 200*time.Microsecond, 100*ms, 600*time.Microsecond)
		if w == 0 || why.sums != 1 {
			t.Errorf("seed %d: 0.2 ms a run with one charged 0.6 ms more, by the margin alone: hot at %d samples, %s", seed, w, why)
		} else {
			t.Logf("seed %d: one run charged 0.6 ms more held the container hot for %d samples by the margin alone: %s", seed, w, why)
		}
	}
}
