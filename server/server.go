package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/workload"
)

// Concurrency is how a server runs requests.
type Concurrency string

const (
	// Goroutine runs each request on its own goroutine (like a thread-per-request
	// server); how many run at once is bounded by GOMAXPROCS.
	Goroutine Concurrency = "goroutine"
	// Single runs one request at a time on one OS thread; the rest wait in arrival
	// order.
	Single Concurrency = "single"
)

// Defaults for Config.
const (
	DefaultMaxInflight = 1024
	DefaultMaxCPU      = 10 * time.Second
	DefaultGrace       = 30 * time.Second
)

// Config describes one server instance.
type Config struct {
	// Name is reported in X-Instance and /info.
	Name string
	// Concurrency is Goroutine (default) or Single.
	Concurrency Concurrency
	// MaxInflight bounds the requests being served or queued at once; more are
	// refused with 503, which keeps memory bounded under a flood.
	MaxInflight int
	// MaxCPU is the most CPU a single request may ask for; above it the request is
	// refused with 400.
	MaxCPU time.Duration
	// SkipCPUClock turns off the per-request thread CPU clock: Server-Timing then
	// has no cpu (and the stall cannot be derived). The clock costs two system
	// calls per request, which shows only on trivial requests such as /api.
	SkipCPUClock bool
	// Grace is how long shutdown waits for in-flight requests.
	Grace time.Duration
	// Burn converts burn=DURATION requests to iterations.
	Burn workload.BurnCalibration
	// Info is extra, static information reported by /info (GOMAXPROCS and how it
	// was chosen, the cgroup limits, the version).
	Info Info
	// Cgroup, if set, is the server's own cgroup: /cgroup and /info report
	// it, and /cgroup/start and /cgroup/stop sample its usage every
	// CgroupInterval (DefaultCgroupInterval if 0). CgroupError says why
	// there is none, for /info.
	Cgroup         *OwnCgroup
	CgroupInterval time.Duration
	CgroupError    string
}

// Info is what /info reports besides the live fields.
type Info struct {
	Version          string            `json:"version"`
	GOMAXPROCS       int               `json:"gomaxprocs"`
	GOMAXPROCSSource string            `json:"gomaxprocs_source"`
	HostCPUs         int               `json:"host_cpus"`
	Limits           *cgroup.CPULimits `json:"limits,omitempty"`
	LimitsError      string            `json:"limits_error,omitempty"`
}

// Server is the workload server. Create it with New.
type Server struct {
	cfg      Config
	metrics  *metrics
	inflight atomic.Int64
	peak     atomic.Int64 // most requests ever admitted at once
	// instanceHeader is the X-Instance value, shared by every response.
	instanceHeader []string
	queue          chan *job     // Single mode only
	stop           chan struct{} // closed when the queue worker should stop
	started        time.Time
	own            *ownSampler // nil without Config.Cgroup
}

// New checks cfg, fills in defaults and returns a server.
func New(cfg Config) (*Server, error) {
	if cfg.Name == "" {
		return nil, errors.New("server needs a name")
	}
	if cfg.Concurrency == "" {
		cfg.Concurrency = Goroutine
	}
	if cfg.Concurrency != Goroutine && cfg.Concurrency != Single {
		return nil, fmt.Errorf("concurrency %q: want goroutine or single", cfg.Concurrency)
	}
	if cfg.MaxInflight <= 0 {
		cfg.MaxInflight = DefaultMaxInflight
	}
	if cfg.MaxCPU <= 0 {
		cfg.MaxCPU = DefaultMaxCPU
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Burn.IterationsPerMs <= 0 {
		return nil, errors.New("server needs a burn calibration (iterations per ms > 0)")
	}
	s := &Server{cfg: cfg, metrics: newMetrics(cfg.Name), started: time.Now(), instanceHeader: []string{cfg.Name}}
	if cfg.Cgroup != nil {
		if cfg.CgroupInterval <= 0 {
			cfg.CgroupInterval = DefaultCgroupInterval
		}
		s.cfg.CgroupInterval = cfg.CgroupInterval
		s.own = newOwnSampler(cfg.Cgroup, cfg.CgroupInterval, MaxCgroupWindow)
	}
	if cfg.Concurrency == Single {
		s.queue = make(chan *job, cfg.MaxInflight)
		s.stop = make(chan struct{})
	}
	return s, nil
}

// PeakInflight returns the most work requests the server ever had admitted at once.
func (s *Server) PeakInflight() int64 { return s.peak.Load() }

// Config returns the server's configuration with defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// Serve answers requests on ln until ctx is cancelled, then stops accepting, lets
// in-flight requests finish (up to the grace period) and returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
	}
	workerDone := make(chan struct{})
	if s.queue != nil {
		go func() { s.runQueue(); close(workerDone) }()
	} else {
		close(workerDone)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), s.cfg.Grace)
		err = hs.Shutdown(sctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("shutdown: requests still running after %s", s.cfg.Grace)
			hs.Close()
		}
	}
	if s.stop != nil {
		// The queue itself is never closed: a handler that outlived a forced
		// shutdown could still be about to send on it.
		close(s.stop)
	}
	<-workerDone
	if s.own != nil {
		s.own.end() // no sampler outlives the server
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
