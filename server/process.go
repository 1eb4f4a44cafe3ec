package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/units"
	"github.com/throttlelab/throttlelab/workload"
)

// ErrListen marks a listen address the process could not listen on (bad
// input to throttlelab serve).
var ErrListen = errors.New("cannot listen")

// Process is one workload server process, as throttlelab serve runs it.
type Process struct {
	// Name is the instance's name for X-Instance (default: the host name).
	Name   string
	Listen string
	// GOMAXPROCS is the policy the process sets, resolved against the host's
	// CPUs and the cgroup's limit: always explicit, never the runtime's
	// container-aware default, because it is an experiment variable.
	GOMAXPROCS units.GOMAXPROCS
	// Single serves one request at a time (the rest queue).
	Single      bool
	MaxInflight int
	MaxCPU      time.Duration
	Grace       time.Duration
	// BurnIterationsPerMs is the burn calibration (0: measure at start-up,
	// about 100 ms of CPU).
	BurnIterationsPerMs float64
	// SkipCPUClock leaves each request's thread CPU time out of
	// Server-Timing.
	SkipCPUClock bool
	Version      string
}

// Run sets GOMAXPROCS, calibrates the burn workload, opens the process's
// own cgroup (so it can measure itself from inside a container), listens,
// writes one line with the real address to out (a runner that asked for
// port 0 reads it), and serves until ctx ends.
func (p Process) Run(ctx context.Context, out io.Writer, log *slog.Logger) error {
	name := p.Name
	if name == "" {
		name, _ = os.Hostname()
	}
	limits, limErr := cgroup.LimitsForCurrentProcess()
	info := Info{Version: p.Version, Limits: limits}
	if limErr != nil {
		info.LimitsError = limErr.Error()
		log.Warn("cannot read the cgroup CPU limits; /info will not show them", "err", limErr)
	}
	hostCPUs, err := cgroup.OnlineCPUs("/")
	if err != nil {
		hostCPUs = runtime.NumCPU()
	}
	limitCores := 0.0
	if limits != nil {
		limitCores = limits.LimitCores
	}
	n, source := p.GOMAXPROCS.Resolve(hostCPUs, runtime.NumCPU(), limitCores)
	runtime.GOMAXPROCS(n)
	info.GOMAXPROCS, info.GOMAXPROCSSource, info.HostCPUs = n, source, hostCPUs

	cal := workload.BurnCalibration{IterationsPerMs: p.BurnIterationsPerMs}
	if cal.IterationsPerMs == 0 {
		// About 100 ms of CPU: 5 rounds of ~20 ms, median taken.
		if cal, err = workload.CalibrateBurn(20_000_000, 5); err != nil {
			return err
		}
	}
	conc := Goroutine
	if p.Single {
		conc = Single
	}
	own, ownErr := OpenOwnCgroupForCurrentProcess()
	ownMsg := ""
	if ownErr != nil {
		ownMsg = ownErr.Error()
		log.Warn("cannot open the own cgroup; /cgroup will not measure", "err", ownErr)
	} else {
		defer own.Close()
	}
	srv, err := New(Config{Name: name, Concurrency: conc, MaxInflight: p.MaxInflight,
		MaxCPU: p.MaxCPU, Grace: p.Grace, Burn: cal, Info: info, SkipCPUClock: p.SkipCPUClock,
		Cgroup: own, CgroupError: ownMsg})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", p.Listen)
	if err != nil {
		return fmt.Errorf("%w on %s: %w", ErrListen, p.Listen, err)
	}
	fmt.Fprintf(out, "listening on http://%s name=%s gomaxprocs=%d concurrency=%s burn_iterations_per_ms=%.0f\n",
		ln.Addr(), name, n, conc, cal.IterationsPerMs)
	err = srv.Serve(ctx, ln)
	log.Info("stopped", "name", name)
	return err
}
