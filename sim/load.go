package sim

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/workload"
)

// Costs turn requests into CPU time. The defaults (DefaultCosts) were
// measured on the reference machine (docs/simulator.md); sim --compare takes
// the burn speed from the results it compares with.
type Costs struct {
	// NsPerIteration is the Mandelbrot kernel's cost per escape-time iteration.
	NsPerIteration float64
	// TileOverhead is the rest of a tile request: PNG encoding and HTTP.
	TileOverhead time.Duration
	// RequestOverhead is the server's CPU per request besides the work (HTTP).
	RequestOverhead time.Duration
	// BurnIterationsPerMs converts burn iterations (and burst goodput) to CPU.
	BurnIterationsPerMs float64
	// Network is the one-way delay between client and server (loopback).
	Network time.Duration
	// BurnOvershoot is how much longer than asked the burn loop runs, as a
	// fraction of the time asked (measured: docs/simulator.md).
	BurnOvershoot float64
	// Background is the CPU an idle Go server uses (sysmon, timers), in cores;
	// it runs beside the next request, for the idle time before it (up to 1 s).
	Background float64
	// WakeCPU is the CPU a Go server spends on waking from idle (idle for
	// over a millisecond) for a request: its scheduler spins threads up, polls
	// the network, parks them again. It runs beside the request. It differs
	// from day to day; a replay takes the measured runs' own (MeasuredCosts).
	WakeCPU time.Duration
	// IdleWake is the extra delay of a message (a request or a response) to
	// a machine whose every CPU has been idle for over IdleWakeAfter: the
	// CPUs have gone into a deep idle state (on the reference VM, a halted
	// virtual CPU) that takes this long to leave. Shorter idle spells cost
	// nothing measurable. It is the machine's idleness that counts, not the
	// process's (the measurements that show it: docs/simulator.md).
	IdleWake, IdleWakeAfter time.Duration
	// ClientTile and ClientRequest are the load generator's CPU per response
	// (a tile is decoded and its pixels hashed; others are only read). The
	// generator runs beside the servers and competes with them for the cores.
	ClientTile, ClientRequest time.Duration
	// BurstGap is a burst process's time between cycles beyond its sleep:
	// its workers' goroutines ending and starting, and the sleep's timer
	// waking late. Small as it is, it moves the busy phases against their
	// group's period grid from cycle to cycle, which decides how many
	// periods' quota a busy phase gets.
	BurstGap time.Duration
}

// DefaultCosts are the reference machine's costs (a 2-core VM), calibrated
// on the validation runs in testdata/real; docs/simulator.md ("The costs")
// lists each with the measurement behind it. sim --compare replaces the
// machine-dependent ones with the measured run's own (MeasuredCosts).
func DefaultCosts() Costs {
	return Costs{NsPerIteration: 2.8, TileOverhead: 100 * time.Microsecond, RequestOverhead: 100 * time.Microsecond,
		BurnIterationsPerMs: 913_000, BurnOvershoot: 0.016, Background: 0.005, IdleWake: 200 * time.Microsecond, IdleWakeAfter: 5 * time.Millisecond, WakeCPU: 300 * time.Microsecond,
		Network: 120 * time.Microsecond, ClientTile: 240 * time.Microsecond, ClientRequest: 80 * time.Microsecond, BurstGap: 950 * time.Microsecond}
}

// simReq is one request as the client sees it.
type simReq struct {
	kind     loadgen.Kind
	tile     workload.Tile
	cost     time.Duration
	tileName string
}

// requestsOf builds the request source of a workload, as the load generator
// does: tiles shuffled with the seed, or one burn or api request.
func requestsOf(w loadgen.WorkloadSpec, cat *workload.Catalog, seed uint64, c Costs) ([]simReq, error) {
	switch w.Kind {
	case loadgen.KindTile, "":
		tiles, err := w.Tiles.Select(cat, seed)
		if err != nil {
			return nil, err
		}
		out := make([]simReq, len(tiles))
		for i, t := range tiles {
			info, _ := cat.Lookup(t)
			out[i] = simReq{kind: loadgen.KindTile, tile: t, tileName: t.String(),
				cost: time.Duration(float64(info.Iterations)*c.NsPerIteration) + c.TileOverhead + c.RequestOverhead}
		}
		return out, nil
	case loadgen.KindBurn:
		b := w.Burn
		cost := b.CPU
		if b.Iterations > 0 {
			cost = time.Duration(float64(b.Iterations) / c.BurnIterationsPerMs * float64(time.Millisecond))
		}
		cost = time.Duration(float64(cost) * (1 + c.BurnOvershoot))
		return []simReq{{kind: loadgen.KindBurn, cost: cost + c.RequestOverhead}}, nil
	case loadgen.KindAPI:
		return []simReq{{kind: loadgen.KindAPI, cost: c.RequestOverhead}}, nil
	}
	return nil, fmt.Errorf("request kind %q: want tile, burn or api", w.Kind)
}

// fn adapts a closure to an event handler (for the client's few events per
// request; the scheduler's own events do not allocate).
type fn func(m *Machine)

func (f fn) handle(m *Machine, _ int64) { f(m) }

// client drives one load against servers, as loadgen.Run does against real
// ones, and records every request through a loadgen.Collector.
type client struct {
	// proc is the load generator's own process, whose CPU the responses take.
	proc    *Server
	cfg     loadgen.Config
	col     *loadgen.Collector
	servers []*Server
	bal     loadgen.Balancer
	reqs    []simReq
	finite  bool
	next    int
	costs   Costs
	seq     int64
	issued  int64
	// inflight counts sent requests without a response; pending are open-loop
	// sends waiting for a slot.
	inflight int
	pending  []pendingSend
	until    time.Duration // 0: none
	sending  bool          // false once nothing more will be sent
	end      time.Duration // when the last response came back
	// ramp state
	step   int
	active int // closed-loop workers still sending in this step
	// keep makes the client hold every record it collects in kept, made
	// compact as the report keeps it (record.Held).
	keep bool
	kept []record.Request
}

type pendingSend struct {
	intended time.Duration
	worker   int
}

// requestCache keeps request sources between runs: every repeat of a load
// asks for the same tiles in the same order (the seed is the spec's).
type requestCache struct {
	mu sync.Mutex
	m  map[string][]simReq
}

func newRequestCache() *requestCache { return &requestCache{m: map[string][]simReq{}} }

// get returns the requests of w with seed, made once and shared (read
// only) by every run that asks, from any goroutine.
func (rc *requestCache) get(w loadgen.WorkloadSpec, cat *workload.Catalog, seed uint64, c Costs) ([]simReq, error) {
	key := fmt.Sprintf("%s|%s|%s|%d", w.Kind, w.Tiles.String(), w.Burn.String(), seed)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if r, ok := rc.m[key]; ok {
		return r, nil
	}
	r, err := requestsOf(w, cat, seed, c)
	if err == nil {
		rc.m[key] = r
	}
	return r, err
}

func newClient(cfg loadgen.Config, col *loadgen.Collector, servers []*Server, proc *Server, cat *workload.Catalog, costs Costs, rc *requestCache) (*client, error) {
	c := &client{cfg: col.Config(), col: col, servers: servers, proc: proc, costs: costs, sending: true}
	var err error
	if c.bal, err = c.cfg.Balancer.New(len(servers), c.cfg.Seed); err != nil {
		return nil, err
	}
	if c.reqs, err = rc.get(c.cfg.Workload, cat, c.cfg.Seed, costs); err != nil {
		return nil, err
	}
	c.finite = c.cfg.Mode == loadgen.ModeImage
	if c.cfg.Duration > 0 {
		c.until = c.cfg.Duration
	}
	return c, nil
}

// done reports whether the load is over: nothing more to send, nothing in flight.
func (c *client) done() bool { return !c.sending && c.inflight == 0 }

func (c *client) take() (simReq, bool) {
	if c.finite && c.next >= len(c.reqs) {
		return simReq{}, false
	}
	r := c.reqs[c.next%len(c.reqs)]
	c.next++
	return r, true
}

func (c *client) admit() bool { return c.cfg.Requests == 0 || c.issued < c.cfg.Requests }

func (c *client) timeUp(m *Machine) bool { return c.until > 0 && m.Now() >= c.until }

// flight is one request from the client's side: one allocation carries it
// through every event (sent, arrived, served, answered, read).
type flight struct {
	c                      *client
	r                      simReq
	seq                    int64
	target, step, worker   int
	waited                 bool
	intended, sent, served time.Duration
	srv                    *Server
	// next runs when the client has read the response: loopNext continues a
	// closed-loop worker until stepUntil, then a function.
	loopNext  bool
	stepUntil time.Duration
	then      func(m *Machine)
	// sr is the request at the server, cr the client's work on the response.
	sr, cr Request
}

// Flight phases, as event arguments.
const (
	atServer = iota
	atClient
)

// send issues one request now; after the response, then() runs.
func (c *client) send(m *Machine, intended time.Duration, r simReq, step, worker int, waited bool, then func(m *Machine)) *flight {
	c.issued++
	c.inflight++
	f := &flight{c: c, r: r, seq: c.seq, intended: intended, sent: m.Now(), step: step, worker: worker, waited: waited, then: then}
	c.seq++
	f.target = c.bal.Pick()
	f.srv = c.servers[f.target]
	f.sr = Request{Work: r.cost, Done: f}
	m.At(f.sent+c.costs.Network+c.wake(m), f, atServer)
	return f
}

func (f *flight) handle(m *Machine, phase int64) {
	c, srv := f.c, f.srv
	switch phase {
	case atServer:
		// An idle server's runtime used some CPU meanwhile (charged when
		// the idle spell ends, to keep events few).
		if idle := min(m.Now()-srv.lastArrival, time.Second); idle > 2*time.Millisecond {
			srv.Background(m, time.Duration(c.costs.Background*float64(idle)))
		}
		if srv.IdleFor(m.Now()) > time.Millisecond {
			srv.Background(m, c.costs.WakeCPU)
		}
		srv.Arrive(m, &f.sr)
	case atClient:
		// The response is in: its latency ends here. Reading (and for a
		// tile, decoding and hashing) it takes the generator's CPU before
		// the worker goes on.
		sr := &f.sr
		rec := loadgen.Record{Seq: f.seq, Intended: f.intended, Start: f.sent, Latency: m.Now() - f.intended, Target: f.target,
			Instance: srv.Name, Status: 200, ServerCPU: sr.Work, ServerWall: f.served - sr.Arrived, Tile: f.r.tileName,
			Step: f.step, Worker: f.worker, Waited: f.waited, Throttled: sr.Throttled}
		if srv.single {
			rec.ServerQueue = sr.Started - sr.Arrived
		}
		if rec.Latency > c.cfg.Timeout {
			rec.Err, rec.Status, rec.Latency = "timeout", 0, c.cfg.Timeout
			rec.ServerQueue, rec.ServerCPU, rec.ServerWall, rec.Throttled = -1, -1, -1, -1
		}
		c.col.Add(&rec)
		if c.keep {
			c.kept = append(c.kept, record.CompactRequest(&rec))
		}
		c.end = max(c.end, m.Now())
		cost := c.costs.ClientRequest
		if f.r.kind == loadgen.KindTile {
			cost = c.costs.ClientTile
		}
		if c.proc == nil || cost == 0 {
			f.read(m)
			return
		}
		f.cr = Request{Work: cost, Done: f}
		c.proc.Arrive(m, &f.cr)
	}
}

// RequestDone implements Doner: the server has served the request, or the
// client has read the response.
func (f *flight) RequestDone(m *Machine, r *Request) {
	if r == &f.sr {
		f.served = m.Now()
		m.At(f.served+f.c.costs.Network+f.c.wake(m), f, atClient)
		return
	}
	f.read(m)
}

// read ends the request: its slot is free and its worker goes on.
func (f *flight) read(m *Machine) {
	c := f.c
	c.inflight--
	c.bal.Done(f.target)
	switch {
	case f.loopNext:
		c.loop(m, f.worker, f.step, f.stepUntil)
	case f.then != nil:
		f.then(m)
	}
}

// wake is the extra delay of a message to a machine whose every core has
// been idle for over IdleWakeAfter.
func (c *client) wake(m *Machine) time.Duration {
	if m.IdleFor() <= c.costs.IdleWakeAfter {
		return 0
	}
	return c.costs.IdleWake
}

// start schedules the load from time 0.
func (c *client) start(m *Machine) error {
	switch c.cfg.Mode {
	case loadgen.ModeImage:
		c.startClosed(m, c.cfg.Workers, 0, 0)
	case loadgen.ModeSequential:
		c.startClosed(m, 1, 0, 0)
	case loadgen.ModeRamp:
		c.startStep(m, 0)
	case loadgen.ModeRate, loadgen.ModeProbe:
		return c.startOpen(m)
	case loadgen.ModeOnOff:
		c.startOnOff(m)
	default:
		return fmt.Errorf("mode %q", c.cfg.Mode)
	}
	return nil
}

// startClosed runs workers that each send one request after another, until
// the source, the request limit or stepUntil (0: the load's end) stops them.
func (c *client) startClosed(m *Machine, workers, step int, stepUntil time.Duration) {
	c.active = workers
	for w := 0; w < workers; w++ {
		c.loop(m, w, step, stepUntil)
	}
	if workers == 0 {
		c.stepDone(m)
	}
}

func (c *client) loop(m *Machine, w, step int, stepUntil time.Duration) {
	if c.timeUp(m) || stepUntil > 0 && m.Now() >= stepUntil || !c.admit() {
		c.workerDone(m)
		return
	}
	r, ok := c.take()
	if !ok {
		c.workerDone(m)
		return
	}
	f := c.send(m, m.Now(), r, step, w, false, nil)
	f.loopNext, f.stepUntil = true, stepUntil
}

// workerDone: a closed-loop worker stopped; the last one ends the step.
func (c *client) workerDone(m *Machine) {
	c.active--
	if c.active == 0 {
		c.stepDone(m)
	}
}

func (c *client) stepDone(m *Machine) {
	if c.cfg.Mode == loadgen.ModeRamp && !c.timeUp(m) && c.admit() && c.cfg.Ramp.From+c.step+1 <= c.cfg.Ramp.To {
		c.startStep(m, c.step+1)
		return
	}
	c.sending = false
}

// startStep starts ramp step k: Ramp.From+k workers for RampStep. As in the
// load generator, requests in flight at a step's end finish before the next
// step starts.
func (c *client) startStep(m *Machine, k int) {
	c.step = k
	workers := c.cfg.Ramp.From + k
	c.col.Step(k, workers, m.Now())
	until := m.Now() + c.cfg.RampStep
	if c.until > 0 {
		until = min(until, c.until)
	}
	c.startClosed(m, workers, k, until)
}

// startOpen schedules sends at the arrival times, whatever the responses do;
// a send that finds MaxInflight requests out waits for a slot.
func (c *client) startOpen(m *Machine) error {
	var arr loadgen.Arrivals
	var err error
	if c.cfg.Arrivals == "poisson" {
		arr, err = loadgen.NewPoisson(c.cfg.Rate, c.cfg.Seed)
	} else {
		arr, err = loadgen.NewConstant(c.cfg.Rate)
	}
	if err != nil {
		return err
	}
	var tick func(m *Machine)
	var scheduled int64
	schedule := func() {
		at := arr.Next()
		if c.until > 0 && at >= c.until || c.cfg.Requests > 0 && scheduled >= c.cfg.Requests {
			c.sending = false
			return
		}
		scheduled++
		m.At(at, fn(tick), 0)
	}
	tick = func(m *Machine) {
		c.sendOpen(m, 0)
		schedule()
	}
	schedule()
	return nil
}

// sendOpen sends an open-loop request due now, or queues it when MaxInflight
// requests are out; worker is the source.
func (c *client) sendOpen(m *Machine, worker int) {
	if c.inflight >= c.cfg.MaxInflight {
		c.pending = append(c.pending, pendingSend{m.Now(), worker})
		return
	}
	r, _ := c.take()
	c.send(m, m.Now(), r, 0, worker, false, c.freeSlot)
}

// freeSlot sends the oldest waiting open-loop request, late.
func (c *client) freeSlot(m *Machine) {
	if len(c.pending) == 0 {
		return
	}
	p := c.pending[0]
	c.pending = c.pending[1:]
	r, _ := c.take()
	c.send(m, p.intended, r, 0, p.worker, true, c.freeSlot)
}

// startOnOff runs Markov on/off sources: exponential ON periods sending back
// to back, exponential OFF periods silent, each source with its own generator
// seeded as the load generator seeds it.
func (c *client) startOnOff(m *Machine) {
	onFrac := float64(c.cfg.OnMean) / float64(c.cfg.OnMean+c.cfg.OffMean)
	c.active = c.cfg.Sources
	for s := 0; s < c.cfg.Sources; s++ {
		rng := rand.New(rand.NewPCG(c.cfg.Seed, uint64(s)+1))
		exp := func(mean time.Duration) time.Duration { return time.Duration(rng.ExpFloat64() * float64(mean)) }
		var on, off func(m *Machine)
		var phaseEnd time.Duration
		src := s
		on = func(m *Machine) {
			if c.timeUp(m) || !c.admit() {
				c.workerDone(m)
				return
			}
			if m.Now() >= phaseEnd {
				off(m)
				return
			}
			if c.cfg.Rate > 0 {
				// Open loop while ON: Poisson sends at Rate.
				next := m.Now() + time.Duration(rng.ExpFloat64()/c.cfg.Rate*float64(time.Second))
				if next >= phaseEnd || c.until > 0 && next >= c.until {
					wake := phaseEnd
					if c.until > 0 && c.until < wake {
						wake = c.until
					}
					m.At(wake, fn(func(m *Machine) {
						if c.timeUp(m) {
							c.workerDone(m)
							return
						}
						off(m)
					}), 0)
					return
				}
				m.At(next, fn(func(m *Machine) {
					if c.timeUp(m) || !c.admit() {
						c.workerDone(m)
						return
					}
					c.sendOpen(m, src)
					on(m)
				}), 0)
				return
			}
			r, _ := c.take()
			c.send(m, m.Now(), r, 0, src, false, on)
		}
		off = func(m *Machine) {
			wake := m.Now() + exp(c.cfg.OffMean)
			if c.until > 0 && wake >= c.until {
				c.workerDone(m)
				return
			}
			m.At(wake, fn(func(m *Machine) {
				phaseEnd = m.Now() + exp(c.cfg.OnMean)
				on(m)
			}), 0)
		}
		if rng.Float64() < onFrac {
			phaseEnd = exp(c.cfg.OnMean)
			m.At(0, fn(on), 0)
		} else {
			m.At(0, fn(off), 0)
		}
	}
}
