package cli

import (
	"errors"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/server"
	"github.com/throttlelab/throttlelab/units"
)

type serveFlags struct {
	listen      string
	name        string
	gomaxprocs  string
	single      bool
	maxInflight int
	maxCPU      time.Duration
	grace       time.Duration
	burnPerMs   float64
	cpuClock    bool
}

func newServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the workload server (Mandelbrot tiles, CPU burn, api)",
		Long: `Run one workload server instance.

Endpoints: GET /tile?x=TX&y=TY (PNG), /burn?iterations=N or /burn?cpu=5ms,
/api, /healthz, /metrics (Prometheus), /info (JSON). Every work response has
X-Instance and Server-Timing (queue, cpu, wall in ms).`,
		Example: `  throttlelab serve --listen 127.0.0.1:8080
  throttlelab serve --listen 127.0.0.1:0 --gomaxprocs automaxprocs --single`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8080", "address to listen on (port 0 picks a free one)")
	fl.StringVar(&f.name, "name", "", "instance name for X-Instance (default: the host name)")
	fl.StringVar(&f.gomaxprocs, "gomaxprocs", "host", `GOMAXPROCS: "host" (all host CPUs), a number, "automaxprocs" (the cgroup's quota/period rounded down, at least 1), "go" (Go 1.25+'s default: rounded up, at least 2, at most the CPUs) or the deprecated "limit" (rounded up, at least 1)`)
	fl.BoolVar(&f.single, "single", false, "serve one request at a time; the rest queue in arrival order")
	fl.IntVar(&f.maxInflight, "max-inflight", server.DefaultMaxInflight, "requests served or queued at once; more get 503")
	durationVar(fl, &f.maxCPU, "max-cpu", server.DefaultMaxCPU, "most CPU one request may ask for; more gets 400")
	durationVar(fl, &f.grace, "grace", server.DefaultGrace, "how long shutdown waits for in-flight requests")
	fl.Float64Var(&f.burnPerMs, "burn-calibration", 0, "burn iterations per ms of CPU (0: measure at start-up)")
	fl.BoolVar(&f.cpuClock, "cpu-clock", true, "measure each request's thread CPU time for Server-Timing (two system calls per request)")
	return cmd
}

func runServe(cmd *cobra.Command, f serveFlags) error {
	if f.maxInflight < 1 {
		return usagef("--max-inflight %d: must be at least 1", f.maxInflight)
	}
	if f.maxCPU <= 0 {
		return usagef("--max-cpu %s: must be positive", f.maxCPU)
	}
	// 1e9 per ms is one iteration per picosecond: far beyond any CPU, and
	// small enough that --max-cpu's worth of iterations fits an integer.
	if !(f.burnPerMs >= 0 && f.burnPerMs <= 1e9) {
		return usagef("--burn-calibration %g: want iterations per ms up to 1e9, or 0 to measure", f.burnPerMs)
	}
	if f.maxCPU > time.Hour || f.grace < 0 || f.grace > time.Hour {
		return usagef("--max-cpu and --grace: want at most 1h (--grace not negative)")
	}
	if f.maxInflight > 1_000_000 {
		return usagef("--max-inflight %d: want 1 to 1000000", f.maxInflight)
	}
	policy, err := units.ParseGOMAXPROCS(f.gomaxprocs)
	if err != nil {
		return usagef("--%v", err)
	}
	p := server.Process{Name: f.name, Listen: f.listen, GOMAXPROCS: policy, Single: f.single, MaxInflight: f.maxInflight,
		MaxCPU: f.maxCPU, Grace: f.grace, BurnIterationsPerMs: f.burnPerMs, SkipCPUClock: !f.cpuClock, Version: Version}
	err = p.Run(cmd.Context(), cmd.OutOrStdout(), slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
	if errors.Is(err, server.ErrListen) {
		return usagef("--listen: %v", err)
	}
	return err
}
