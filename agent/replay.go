package agent

import (
	"encoding/binary"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cfs"
)

// demand expands a chunk for the replay: one period of prefill, the phase
// lead, then the samples. An interval longer than one and a half fine
// steps (Period/Phases: a coarse sample of sampling by need, or a late
// one) that lies within one of the replay's periods has its work
// front-loaded: in fine steps from its start, each at most the chunk's
// parallelism bound (cores: the CPUs the replay lets waiting work catch up
// on), the rest of the interval idle; work beyond the bound over the whole
// interval goes into its last step. maxCores is the highest use over one
// interval as sampled (advise.Demand.MaxCores' rule), before the expansion.
//
// Why the delays are an upper bound of those of fine samples that keep
// within the bound. The replay serves work in arrival order, on at most
// cores CPUs while work waits and as it arrives otherwise, and not at all
// while the pool is dry. Take any spread of the interval's work over its
// fine steps, none above cores CPUs.
//   - The period's sum is the same (Add keeps the counters' own
//     microseconds), and work arriving no faster than the service runs
//     leaves the service of a period the same whichever its spread: how
//     much is served, whether the pool runs dry (the period throttles) and
//     what carries over (backlog, burst pool) depend only on the sum and
//     what came in. Every period replays alike, this one and those after.
//   - So the pool runs dry at the same unit of work, and a unit x is
//     served at max over the units y up to it of arrival(y) + (x-y)/cores,
//     plus the wait for the refill where the pool ran dry between them.
//     Its delay, that minus arrival(x), is largest when arrival(x) -
//     arrival(y) is smallest: (x-y)/cores for y in the interval, which only
//     front-loading at cores reaches, and arrival(x) earliest for y
//     before it. Each unit waits at least as long as under any spread, so
//     every quantile of the delays is at least as high.
//
// Front-loading faster than cores (the node's CPUs, as before) would let
// the replay serve that work faster than the group can run, which shortens
// the waits of the work behind it and changes what carries over. Fine
// samples above the bound (late readings) keep within it in the replay too:
// their excess arrives after them, within their period (cfs's lateReading),
// but at a period's last sample, whose reading the grid's shares. And the
// replay splits a sample where the pool runs dry, so that no delay stands
// for work on both sides of a wait for the refill. docs/fleet.md measures
// what is left.
func (c *Chunk) demand(cfg *SummaryConfig) (d *advise.Demand, maxCores float64) {
	period := cfg.Period
	fine := period / time.Duration(cfg.Phases)
	step := time.Duration(c.cores) * fine
	n := c.n
	at, usage := make([]time.Duration, 0, n+3), make([]time.Duration, 0, n+3)
	at, usage = append(at, 0, period), append(usage, 0, prefill)
	if c.lead > 0 {
		at, usage = append(at, period+c.lead), append(usage, prefill)
	}
	// The per-CPU split, aligned with at: nothing on any CPU over the
	// prefill and the lead (such an interval takes the chunk's split,
	// cfs.Demand.Split) and over a front-loaded interval's fine steps but
	// its last, which has the interval's whole split.
	var perCPU [][]time.Duration
	if c.ncpu > 0 {
		perCPU = make([][]time.Duration, c.ncpu)
		for k := range perCPU {
			perCPU[k] = make([]time.Duration, len(at), n+len(at))
		}
	}
	cb := c.cpuDeltas
	var a, u time.Duration
	for b := c.deltas; len(b) > 0; {
		dt, k := binary.Uvarint(b)
		du, l := binary.Uvarint(b[k:])
		b = b[k+l:]
		t0, u0 := period+c.lead+a, prefill+u
		a += time.Duration(dt) * time.Microsecond
		u += time.Duration(du) * time.Microsecond
		t1 := period + c.lead + a
		if d := t1 - t0; d >= 5*time.Millisecond {
			maxCores = max(maxCores, float64(u-(u0-prefill))/float64(d))
		}
		if t1-t0 > fine*3/2 && du > 0 && t0/period == (t1-1)/period {
			for t, rest := t0, prefill+u-u0; rest > 0 && t+fine < t1; {
				w := min(rest, step)
				t, u0, rest = t+fine, u0+w, rest-w
				at, usage = append(at, t), append(usage, u0)
				for k, p := range perCPU {
					perCPU[k] = append(p, p[len(p)-1])
				}
			}
		}
		at, usage = append(at, t1), append(usage, prefill+u)
		for k, p := range perCPU {
			v, l := binary.Uvarint(cb)
			cb = cb[l:]
			perCPU[k] = append(p, p[len(p)-1]+time.Duration(v)*time.Microsecond)
		}
	}
	return &advise.Demand{At: at, Usage: usage, Cores: c.cores, Arrivals: c.arrivals, PerCPU: perCPU}, maxCores
}

// Replayed is a chunk's evaluations, ready to fold into its summary.
type Replayed struct {
	start    time.Duration
	startup  bool
	span     time.Duration
	work     float64
	n        int
	periods  float64
	maxCores float64
	// startupCores is a start-up chunk's demand on the 10 ms grid (startup.go).
	startupCores []float32
	// cpus and atOnce are the CPUs the chunk ran on and the most within
	// one interval; split, whether it carried a per-CPU split.
	cpus, atOnce int
	split        bool
	keys         []int32
	evs          []advise.Evaluation
	knots        []delayKnots
}

// Replay runs a chunk through the quota model at every ladder limit up to
// the first that covers the chunk's highest use (every limit above it is as
// unthrottled as that one), each without burst and with a burst equal to
// it. It is the costly step and touches no summary: run it anywhere.
func (cfg *SummaryConfig) Replay(c *Chunk) (*Replayed, error) {
	d, maxCores := c.demand(cfg)
	lead := cfg.Period + c.lead
	if d.Duration()-lead < cfg.Period {
		return nil, nil // too short to replay: a container that just went
	}
	var points []advise.Point
	var idx []int32
	for i, l := range cfg.Ladder {
		p := advise.Point{LimitMilli: l, Period: cfg.Period}
		if p.Check() != nil {
			continue
		}
		points = append(points, p, advise.Point{LimitMilli: l, BurstMilli: l, Period: cfg.Period})
		idx = append(idx, key(i, false), key(i, true))
		if float64(l) >= maxCores*1000 {
			break
		}
	}
	zero, qs := make([]float64, len(points)), make([][]float64, len(points))
	evs, err := advise.Evaluate(d, points, advise.Options{Phases: 1, Workers: 1, Delays: func(i int, h *cfs.DelayHist) {
		zero[i] = h.ZeroShare()
		v := make([]float64, len(delayQs))
		for j, q := range delayQs {
			v[j] = h.Quantile(q) / 1e6
		}
		qs[i] = v
	}})
	if err != nil {
		return nil, err
	}
	r := &Replayed{start: c.start, startup: c.startup, span: d.Duration() - lead, work: float64(d.Work() - prefill), n: c.n, maxCores: maxCores}
	if c.startup {
		r.startupCores = startupCores(d, lead) // the boost's profile (startup.go)
	}
	if d.PerCPU != nil {
		r.cpus, r.atOnce, r.split = d.CPUsUsed(), d.CPUsAtOnce(), true
	}
	if len(evs) > 0 {
		// The periods the group was active in on its own: the least
		// throttled point's (the last), without the prefill's period.
		r.periods = evs[len(evs)-1].Periods - 1
	}
	for i, e := range evs {
		if e.ThrottledPeriods == 0 && e.DelayMaxMs == 0 {
			continue
		}
		r.keys = append(r.keys, idx[i])
		r.evs = append(r.evs, e)
		r.knots = append(r.knots, knotsOf(zero[i], qs[i], e.DelayMaxMs))
	}
	return r, nil
}

// Fold adds a replayed chunk to its block.
func (s *ContainerSummary) Fold(r *Replayed) {
	if r == nil {
		return
	}
	b := s.blockOf(r.start, r.startup)
	s.foldStartup(r)
	for i, e := range r.evs {
		a := b.point(r.keys[i])
		old := a.Delay.unpack()
		if a.Throttled == 0 && a.Bursts == 0 && old.Max == 0 {
			old = delayKnots{Zero: 1} // new here: no delay in the block before
		}
		a.Delay = mergeDelay([]weighted{{old, b.Work}, {r.knots[i], r.work}}).pack()
		a.Throttled += float32(e.ThrottledPeriods)
		a.ThrottledSeconds += float32(e.ThrottledSeconds)
		a.Bursts += float32(e.Bursts)
		a.ExtraPeriods += float32(max(e.Periods-1-r.periods, 0))
	}
	b.Periods += r.periods
	b.Span += r.span
	b.Work += r.work
	b.Samples += r.n
	b.MaxCores = max(b.MaxCores, r.maxCores)
	if r.split {
		b.CPUs, b.CPUsAtOnce = max(b.CPUs, r.cpus), max(b.CPUsAtOnce, r.atOnce)
		b.SplitChunks++
	}
}

func (s *ContainerSummary) replayFold(c *Chunk) {
	if c == nil {
		return // Flush had no open chunk
	}
	r, err := s.cfg.Replay(c)
	if err != nil {
		s.err = err
		return
	}
	s.Fold(r)
}
