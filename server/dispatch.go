package server

import (
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/throttlelab/throttlelab/workload"
)

var pid = os.Getpid()

type atomicBool = atomic.Bool

// statusClientGone is recorded (as nginx does) when the client disconnected before
// its queued request ran.
const statusClientGone = 499

// serveJob runs j under the server's concurrency discipline and writes the
// response with its timing headers.
func (s *Server) serveJob(w http.ResponseWriter, r *http.Request, j *job) {
	n := s.inflight.Add(1)
	if n > int64(s.cfg.MaxInflight) {
		s.inflight.Add(-1)
		w.Header().Set("Retry-After", "1")
		s.fail(w, r, j.endpoint, http.StatusServiceUnavailable,
			fmt.Sprintf("server busy: %d requests in flight, the maximum is %d (--max-inflight)", n-1, s.cfg.MaxInflight))
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
		j.cpu = workload.OnThread(func() { j.run(&j.resp) })
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
			return
		}
	}
	wall := time.Since(j.arrival)
	queue := j.started.Sub(j.arrival)

	h := w.Header()
	h.Set("X-Instance", s.cfg.Name)
	h.Set("Server-Timing", serverTiming(queue, j.cpu, wall))
	h.Set("Content-Type", j.resp.contentType)
	h.Set("Content-Length", strconv.Itoa(len(j.resp.body)))
	for k, v := range j.resp.headers {
		h.Set(k, v)
	}
	w.WriteHeader(http.StatusOK)
	w.Write(j.resp.body)
	s.metrics.observe(j.endpoint, wall, queue, j.cpu)
}

// serverTiming formats the standard Server-Timing header (durations in ms).
func serverTiming(queue, cpu, wall time.Duration) string {
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) }
	return "queue;dur=" + ms(queue) + ", cpu;dur=" + ms(cpu) + ", wall;dur=" + ms(wall)
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
			start := workload.ThreadCPU()
			j.run(&j.resp)
			j.cpu = workload.ThreadCPU() - start
			close(j.done)
		case <-s.stop:
			return
		}
	}
}
