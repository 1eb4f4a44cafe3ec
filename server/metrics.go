package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the server's Prometheus metrics, in a registry of its own so that
// several servers can live in one process (tests do that).
type metrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	inflight prometheus.Gauge
	// Per work endpoint, resolved once so that the hot path does no label lookups.
	work map[string]*endpointMetrics
}

type endpointMetrics struct {
	ok       prometheus.Counter
	duration prometheus.Observer
	cpu      prometheus.Counter
	queue    prometheus.Counter
	stall    prometheus.Counter
}

func newMetrics(instance string) *metrics {
	labels := prometheus.Labels{"instance": instance}
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "throttlelab_requests_total", Help: "Requests answered, by endpoint and status code.", ConstLabels: labels,
		}, []string{"endpoint", "code"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "throttlelab_requests_in_flight", Help: "Work requests being served or queued.", ConstLabels: labels,
		}),
		work: map[string]*endpointMetrics{},
	}
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "throttlelab_request_duration_seconds", Help: "Wall time of successful work requests, from request read to response.",
		ConstLabels: labels, Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
	}, []string{"endpoint"})
	cpu := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "throttlelab_request_cpu_seconds_total", Help: "Thread CPU time spent computing work requests.", ConstLabels: labels,
	}, []string{"endpoint"})
	queue := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "throttlelab_request_queue_seconds_total", Help: "Time work requests waited for a worker (single mode).", ConstLabels: labels,
	}, []string{"endpoint"})
	stall := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "throttlelab_request_stall_seconds_total", Help: "Wall - queue - CPU time of work requests: runnable but not running (throttled or preempted).", ConstLabels: labels,
	}, []string{"endpoint"})
	m.registry.MustRegister(m.requests, m.inflight, duration, cpu, queue, stall,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, e := range []string{"tile", "burn", "api"} {
		m.work[e] = &endpointMetrics{
			ok:       m.requests.WithLabelValues(e, "200"),
			duration: duration.WithLabelValues(e),
			cpu:      cpu.WithLabelValues(e),
			queue:    queue.WithLabelValues(e),
			stall:    stall.WithLabelValues(e),
		}
	}
	return m
}

func (m *metrics) count(endpoint string, code int) {
	m.requests.WithLabelValues(endpoint, strconv.Itoa(code)).Inc()
}

func (m *metrics) observe(endpoint string, wall, queue, cpu time.Duration) {
	e := m.work[endpoint]
	if e == nil {
		m.count(endpoint, http.StatusOK)
		return
	}
	e.ok.Inc()
	e.duration.Observe(wall.Seconds())
	e.queue.Add(queue.Seconds())
	if cpu < 0 {
		return // not measured (--cpu-clock=false)
	}
	e.cpu.Add(cpu.Seconds())
	if stall := wall - queue - cpu; stall > 0 {
		e.stall.Add(stall.Seconds())
	}
}
