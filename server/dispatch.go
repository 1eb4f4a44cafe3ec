package server

import (
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/throttlelab/throttlelab/workload"
)

var pid = os.Getpid()

// statusClientGone is recorded (as nginx does) when the client disconnected before
// its queued request ran.
const statusClientGone = 499

var jobPool = sync.Pool{New: func() any { return new(job) }}

// newJob returns a job from the pool, ready to run.
func newJob(endpoint string, arrival time.Time, run func(*response)) *job {
	j := jobPool.Get().(*job)
	j.endpoint, j.arrival, j.run = endpoint, arrival, run
	return j
}

// release returns j to the pool. A job whose client left while it was queued is
// not released: the queue worker may still be about to look at it.
func (j *job) release() {
	*j = job{}
	jobPool.Put(j)
}

// serveJob runs j under the server's concurrency discipline and writes the
// response with its timing headers.
func (s *Server) serveJob(w http.ResponseWriter, r *http.Request, j *job) {
	n := s.inflight.Add(1)
	if n > int64(s.cfg.MaxInflight) {
		s.inflight.Add(-1)
		w.Header().Set("Retry-After", "1")
		s.fail(w, r, j.endpoint, http.StatusServiceUnavailable,
			fmt.Sprintf("server busy: %d requests in flight, the maximum is %d", n-1, s.cfg.MaxInflight))
		j.release()
		return
	}
	defer s.inflight.Add(-1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	s.metrics.inflight.Inc()
	defer s.metrics.inflight.Dec()

	if s.queue == nil {
		j.started = time.Now()
		if !s.cfg.SkipCPUClock {
			j.runLocked()
		} else {
			j.cpu = -1
			j.run(&j.resp)
		}
	} else {
		j.done = make(chan struct{})
		// Never blocks: the queue holds MaxInflight jobs and at most MaxInflight
		// requests are admitted.
		s.queue <- j
		select {
		case <-j.done:
		case <-r.Context().Done():
			j.cancelled.Store(true)
			s.metrics.count(j.endpoint, statusClientGone)
			return // not released: see release
		}
	}
	wall := time.Since(j.arrival)
	queue := j.started.Sub(j.arrival)

	// Keys are already canonical and the constant values are shared slices, so the
	// hot path skips header canonicalisation and allocation (net/http never
	// modifies header values). Every key in the map costs net/http a sort and a
	// scan when it writes the header, which shows on trivial requests: bodies up
	// to its chunking threshold get Content-Length from net/http's own fast path.
	h := w.Header()
	h["X-Instance"] = s.instanceHeader
	h["Server-Timing"] = []string{serverTiming(queue, j.cpu, wall)}
	ct, ok := contentTypes[j.resp.contentType]
	if !ok {
		ct = []string{j.resp.contentType}
	}
	h["Content-Type"] = ct
	if len(j.resp.body) > netHTTPChunkingSize {
		h["Content-Length"] = []string{strconv.Itoa(len(j.resp.body))}
	}
	for k, v := range j.resp.headers {
		h.Set(k, v)
	}
	w.WriteHeader(http.StatusOK)
	w.Write(j.resp.body)
	s.metrics.observe(j.endpoint, wall, queue, j.cpu)
	j.release()
}

// netHTTPChunkingSize is net/http's bufferBeforeChunkingSize: a handler that
// writes no more than this and returns gets a Content-Length header computed by
// net/http; a larger body without one would be sent chunked.
const netHTTPChunkingSize = 2048

var contentTypes = map[string][]string{
	"image/png":        {"image/png"},
	"application/json": {"application/json"},
}

// serverTiming formats the standard Server-Timing header, durations in ms with
// microsecond resolution. cpu < 0 means it was not measured and is left out.
func serverTiming(queue, cpu, wall time.Duration) string {
	b := make([]byte, 0, 64)
	b = append(b, "queue;dur="...)
	b = appendMs(b, queue)
	if cpu >= 0 {
		b = append(b, ", cpu;dur="...)
		b = appendMs(b, cpu)
	}
	b = append(b, ", wall;dur="...)
	b = appendMs(b, wall)
	return string(b)
}

// appendMs appends d in milliseconds with three decimals ("12.345"), formatted
// from integer microseconds: float formatting is a measurable part of the cost
// of a trivial request.
func appendMs(b []byte, d time.Duration) []byte {
	us := int64(d / time.Microsecond)
	if us < 0 {
		b = append(b, '-')
		us = -us
	}
	b = strconv.AppendInt(b, us/1000, 10)
	frac := us % 1000
	return append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
}

// runLocked runs j with its goroutine locked to its OS thread and sets j.cpu to
// the CPU time the thread got meanwhile: two readings of the thread CPU clock
// (two system calls; docs/performance.md has their cost), and no closure to allocate as
// workload.OnThread would need.
func (j *job) runLocked() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := workload.ThreadCPU()
	j.run(&j.resp)
	j.cpu = workload.ThreadCPU() - start
}

// runQueue serves queued jobs one at a time, in arrival order, on one OS thread.
func (s *Server) runQueue() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for {
		select {
		case j := <-s.queue:
			if j.cancelled.Load() {
				close(j.done)
				continue
			}
			j.started = time.Now()
			if !s.cfg.SkipCPUClock {
				start := workload.ThreadCPU()
				j.run(&j.resp)
				j.cpu = workload.ThreadCPU() - start
			} else {
				j.cpu = -1
				j.run(&j.resp)
			}
			close(j.done)
		case <-s.stop:
			return
		}
	}
}
