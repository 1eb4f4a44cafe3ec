package loadgen

import (
	"context"
	"encoding/hex"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/throttlelab/throttlelab/workload"
)

// Result is the outcome of a load: the summary and the latency histogram.
type Result struct {
	Summary *Totals
	// Histogram holds the latencies of successful requests in microseconds.
	Histogram *hdrhistogram.Histogram
}

type runner struct {
	cfg    Config
	clock  Clock
	src    *source
	bal    Balancer
	rec    *recorder
	cat    *workload.Catalog
	start  time.Time
	until  time.Time // zero: no time limit
	reqCtx context.Context

	mu     sync.Mutex
	seq    int64
	issued atomic.Int64

	verify bool
	// Tile hashes received, by tile index (image mode).
	hashes   []workload.TileHash
	received []bool
}

// Run drives the load described by cfg until it is done or ctx is cancelled. On
// cancellation it stops sending, lets in-flight requests finish for up to
// cfg.Grace, and returns what was measured with Summary.Interrupted set. Every
// request, failed or not, is a record.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, clock: cfg.Clock, cat: cfg.Catalog}
	if r.cat == nil && cfg.Workload.Kind == KindTile {
		if r.cat, err = workload.DefaultCatalog(); err != nil {
			return nil, err
		}
	}
	r.verify = cfg.Workload.Kind == KindTile && !cfg.NoVerify
	if r.src, err = newSource(cfg.Workload, r.cat, cfg.Seed, cfg.Mode == ModeImage); err != nil {
		return nil, err
	}
	n := len(cfg.Targets)
	if cfg.Doer == nil {
		hd := NewHTTPDoer(cfg.Targets, max(cfg.Workers, cfg.Ramp.To, cfg.Sources, 64), !cfg.NewConnection)
		defer hd.Close()
		cfg.Doer = hd
		r.cfg.Doer = cfg.Doer
	}
	if n == 0 {
		n = 1 // a test doer without target URLs
	}
	if r.bal, err = cfg.Balancer.New(n, cfg.Seed); err != nil {
		return nil, err
	}
	if r.rec, err = newRecorder(cfg.Records); err != nil {
		return nil, err
	}
	if cfg.Mode == ModeImage {
		r.hashes = make([]workload.TileHash, workload.TileCount)
		r.received = make([]bool, workload.TileCount)
	}

	// In-flight requests outlive a cancelled ctx by the grace period.
	reqCtx, cancelReqs := context.WithCancel(context.Background())
	defer cancelReqs()
	r.reqCtx = reqCtx
	go func() {
		select {
		case <-ctx.Done():
			t := time.NewTimer(cfg.Grace)
			defer t.Stop()
			select {
			case <-t.C:
				cancelReqs()
			case <-reqCtx.Done():
			}
		case <-reqCtx.Done():
		}
	}()

	r.start = r.clock.Now()
	if cfg.Duration > 0 {
		r.until = r.start.Add(cfg.Duration)
	}
	stopProgress := r.progress()
	switch cfg.Mode {
	case ModeImage:
		r.closedLoop(ctx, cfg.Workers, 0, r.until)
	case ModeSequential:
		r.closedLoop(ctx, 1, 0, r.until)
	case ModeRamp:
		r.ramp(ctx)
	case ModeRate, ModeProbe:
		err = r.openLoop(ctx)
	case ModeOnOff:
		r.onOff(ctx)
	}
	stopProgress()
	elapsed := r.clock.Now().Sub(r.start)
	if ferr := r.rec.flush(); ferr != nil && err == nil {
		err = ferr
	}
	// A timed load that ran to its end spans its whole duration, even when the
	// last request went out (and came back) before it: that is the rate it ran at.
	if cfg.Duration > 0 && ctx.Err() == nil {
		elapsed = max(elapsed, cfg.Duration)
	}
	s := r.summary(elapsed)
	s.Interrupted = ctx.Err() != nil
	return &Result{Summary: s, Histogram: r.rec.all}, err
}

// pick numbers the next request and chooses its target, under one lock so that
// Seq order is the balancer's order.
func (r *runner) pick() (int64, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq := r.seq
	r.seq++
	return seq, r.bal.Pick()
}

// admit reports whether one more request may be sent under the request limit.
func (r *runner) admit() bool {
	return r.cfg.Requests == 0 || r.issued.Add(1) <= r.cfg.Requests
}

func (r *runner) timeUp() bool {
	return !r.until.IsZero() && !r.clock.Now().Before(r.until)
}

// send performs one request that was due at intended and records it.
func (r *runner) send(intended time.Time, req Request, seq int64, target, step, worker int, waited bool) {
	start := r.clock.Now()
	res := r.cfg.Doer.Do(r.reqCtx, start.Add(r.cfg.Timeout), target, req, r.verify && req.Kind == KindTile)
	end := r.clock.Now()
	r.bal.Done(target)
	rec := Record{
		Seq: seq, Intended: intended.Sub(r.start), Start: start.Sub(r.start), Latency: end.Sub(intended),
		Target: target, Instance: res.Instance, Status: res.Status, Bytes: res.Bytes, Err: res.ErrKind,
		ServerQueue: res.Timing.Queue, ServerCPU: res.Timing.CPU, ServerWall: res.Timing.Wall,
		Step: step, Worker: worker, Waited: waited, Throttled: -1,
	}
	if res.ErrKind != "" && res.Status == 0 {
		rec.ServerQueue, rec.ServerCPU, rec.ServerWall = -1, -1, -1
	}
	if req.Kind == KindTile {
		rec.Tile = req.Tile.String()
		if r.verify && res.ErrKind == "" {
			h, err := tileHash(res.Body)
			if err != nil || h != r.cat.Tiles[req.Tile.Index()].Hash {
				rec.Err = ErrBadTile
			} else if r.hashes != nil {
				r.mu.Lock()
				r.hashes[req.Tile.Index()] = h
				r.received[req.Tile.Index()] = true
				r.mu.Unlock()
			}
		}
	}
	r.rec.add(&rec)
}

// closedLoop runs workers that each send one request after another until the
// source is exhausted, the request limit or until is reached, or ctx ends.
func (r *runner) closedLoop(ctx context.Context, workers, step int, until time.Time) {
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && r.reqCtx.Err() == nil {
				if !until.IsZero() && !r.clock.Now().Before(until) {
					return
				}
				if !r.admit() {
					return
				}
				req, ok := r.src.take()
				if !ok {
					return
				}
				seq, target := r.pick()
				r.send(r.clock.Now(), req, seq, target, step, w, false)
			}
		}()
	}
	wg.Wait()
}

// ramp runs the closed loop with Ramp.From..Ramp.To workers, RampStep each.
func (r *runner) ramp(ctx context.Context) {
	for w, step := r.cfg.Ramp.From, 0; w <= r.cfg.Ramp.To && ctx.Err() == nil; w, step = w+1, step+1 {
		r.rec.mu.Lock()
		r.rec.steps[step] = &stepAcc{hist: newHist(), workers: w, start: r.clock.Now().Sub(r.start)}
		r.rec.mu.Unlock()
		until := r.clock.Now().Add(r.cfg.RampStep)
		if !r.until.IsZero() && r.until.Before(until) {
			until = r.until
		}
		r.closedLoop(ctx, w, step, until)
		if r.timeUp() {
			return
		}
	}
}

// openLoop sends on the schedule of the arrivals, whatever the responses do. A
// send waits for a free slot (at most MaxInflight at once); one that had to wait
// is counted late, and its latency still runs from its intended time.
func (r *runner) openLoop(ctx context.Context) error {
	var arr Arrivals
	var err error
	if r.cfg.Arrivals == "poisson" {
		arr, err = NewPoisson(r.cfg.Rate, r.cfg.Seed)
	} else {
		arr, err = NewConstant(r.cfg.Rate)
	}
	if err != nil {
		return err
	}
	slots := make(chan struct{}, r.cfg.MaxInflight)
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		intended := r.start.Add(arr.Next())
		if !r.until.IsZero() && !intended.Before(r.until) {
			return nil
		}
		if !r.admit() {
			return nil
		}
		// With one slot the request before ran inline: if it ended after this one
		// was due, this one waited for it.
		waited := r.cfg.MaxInflight == 1 && r.clock.Now().After(intended)
		if r.clock.SleepUntil(ctx, intended) != nil {
			return nil
		}
		if r.cfg.MaxInflight == 1 {
			// One slot: the next send waits for this one anyway, so send inline
			// (which also makes the schedule exact on a fake clock).
			req, _ := r.src.take()
			seq, target := r.pick()
			r.send(intended, req, seq, target, 0, 0, waited)
			continue
		}
		if !r.sendAsync(ctx, slots, &wg, intended, 0, waited) {
			return nil
		}
	}
	return nil
}

// sendAsync sends one open-loop request due at intended in its own goroutine,
// once one of the slots (MaxInflight of them) is free; a send that had to wait
// for one counts as late. It reports false if ctx ended while waiting.
func (r *runner) sendAsync(ctx context.Context, slots chan struct{}, wg *sync.WaitGroup, intended time.Time, source int, waited bool) bool {
	select {
	case slots <- struct{}{}:
	default:
		waited = true
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return false
		}
	}
	req, _ := r.src.take()
	seq, target := r.pick()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() { <-slots }()
		r.send(intended, req, seq, target, 0, source, waited)
	}()
	return true
}

// onOff runs independent Markov on/off sources: each alternates exponentially
// distributed ON periods, sending back to back, and OFF periods, silent.
func (r *runner) onOff(ctx context.Context) {
	var wg sync.WaitGroup
	// Open-loop sources share the in-flight limit, as the rate mode does.
	slots := make(chan struct{}, r.cfg.MaxInflight)
	onFrac := float64(r.cfg.OnMean) / float64(r.cfg.OnMean+r.cfg.OffMean)
	for s := 0; s < r.cfg.Sources; s++ {
		rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(s)+1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			exp := func(mean time.Duration) time.Duration { return time.Duration(rng.ExpFloat64() * float64(mean)) }
			// Start in the stationary state, so the load is steady from the start.
			on := rng.Float64() < onFrac
			for ctx.Err() == nil && r.reqCtx.Err() == nil && !r.timeUp() {
				if !on {
					wake := r.clock.Now().Add(exp(r.cfg.OffMean))
					if !r.until.IsZero() && r.until.Before(wake) {
						wake = r.until // sleeping past the end would only stretch the run
					}
					if r.clock.SleepUntil(ctx, wake) != nil {
						return
					}
					on = true
					continue
				}
				phaseEnd := r.clock.Now().Add(exp(r.cfg.OnMean))
				if r.cfg.Rate > 0 {
					// Open loop while ON: Poisson sends at Rate, whatever the
					// responses do (a Markov-modulated Poisson source).
					if !r.onOpen(ctx, rng, phaseEnd, s, slots, &wg) {
						return
					}
					on = false
					continue
				}
				for ctx.Err() == nil && r.clock.Now().Before(phaseEnd) && !r.timeUp() {
					if !r.admit() {
						return
					}
					req, _ := r.src.take()
					seq, target := r.pick()
					r.send(r.clock.Now(), req, seq, target, 0, s, false)
				}
				on = false
			}
		}()
	}
	wg.Wait()
}

// onOpen sends Poisson arrivals at Rate until phaseEnd, each in its own
// goroutine within the in-flight limit (latency from its due time), and
// reports whether to go on.
func (r *runner) onOpen(ctx context.Context, rng *rand.Rand, phaseEnd time.Time, source int, slots chan struct{}, wg *sync.WaitGroup) bool {
	next := r.clock.Now()
	for {
		next = next.Add(time.Duration(rng.ExpFloat64() / r.cfg.Rate * float64(time.Second)))
		if !next.Before(phaseEnd) || !r.until.IsZero() && !next.Before(r.until) {
			wake := phaseEnd
			if !r.until.IsZero() && r.until.Before(wake) {
				wake = r.until
			}
			return r.clock.SleepUntil(ctx, wake) == nil && !r.timeUp()
		}
		if r.clock.SleepUntil(ctx, next) != nil || !r.admit() || !r.sendAsync(ctx, slots, wg, next, source, false) {
			return false
		}
	}
}

// progress reports progress every 200 ms until the returned function is called.
func (r *runner) progress() func() {
	if r.cfg.Progress == nil {
		return func() {}
	}
	total := func() int64 {
		switch {
		case r.cfg.Requests > 0:
			return r.cfg.Requests
		case r.cfg.Mode == ModeImage:
			return int64(len(r.src.reqs))
		case r.cfg.Mode == ModeRamp:
			return int64(r.cfg.Ramp.Steps()) * r.cfg.RampStep.Milliseconds()
		}
		return r.cfg.Duration.Milliseconds()
	}()
	done := func() int64 {
		if r.cfg.Requests > 0 || r.cfg.Mode == ModeImage {
			r.rec.mu.Lock()
			defer r.rec.mu.Unlock()
			return r.rec.n
		}
		return r.clock.Now().Sub(r.start).Milliseconds()
	}
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				r.cfg.Progress(min(done(), total), total)
			case <-stop:
				r.cfg.Progress(min(done(), total), total)
				return
			}
		}
	}()
	return func() { close(stop); <-finished }
}

// imageChecksum returns the image checksum of the received tiles if every tile
// arrived and checked out.
func (r *runner) imageChecksum() (string, bool) {
	for _, ok := range r.received {
		if !ok {
			return "", false
		}
	}
	sum := workload.ImageChecksum(r.hashes)
	return hex.EncodeToString(sum[:]), true
}
