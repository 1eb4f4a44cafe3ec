package cli

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/server"
	"github.com/throttlelab/throttlelab/units"
	"github.com/throttlelab/throttlelab/workload"
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
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	name := f.name
	if name == "" {
		name, _ = os.Hostname()
	}
	limits, limErr := cgroup.LimitsForCurrentProcess()
	info := server.Info{Version: Version, Limits: limits}
	if limErr != nil {
		info.LimitsError = limErr.Error()
		log.Warn("cannot read the cgroup CPU limits; /info will not show them", "err", limErr)
	}
	hostCPUs, err := cgroup.OnlineCPUs("/")
	if err != nil {
		hostCPUs = runtime.NumCPU()
	}
	// GOMAXPROCS is an experiment variable: always set explicitly, never left to
	// the runtime's container-aware default.
	policy, err := units.ParseGOMAXPROCS(f.gomaxprocs)
	if err != nil {
		return usagef("--%v", err)
	}
	limitCores := 0.0
	if limits != nil {
		limitCores = limits.LimitCores
	}
	n, source := policy.Resolve(hostCPUs, runtime.NumCPU(), limitCores)
	runtime.GOMAXPROCS(n)
	info.GOMAXPROCS, info.GOMAXPROCSSource, info.HostCPUs = n, source, hostCPUs

	cal := workload.BurnCalibration{IterationsPerMs: f.burnPerMs}
	if f.burnPerMs == 0 {
		// About 100 ms of CPU: 5 rounds of ~20 ms, median taken.
		if cal, err = workload.CalibrateBurn(20_000_000, 5); err != nil {
			return err
		}
	}
	conc := server.Goroutine
	if f.single {
		conc = server.Single
	}
	// The server's own group, so it can measure itself from inside a
	// container (GET /cgroup, POST /cgroup/start and /cgroup/stop).
	own, ownErr := server.OpenOwnCgroupForCurrentProcess()
	ownMsg := ""
	if ownErr != nil {
		ownMsg = ownErr.Error()
		log.Warn("cannot open the own cgroup; /cgroup will not measure", "err", ownErr)
	} else {
		defer own.Close()
	}
	srv, err := server.New(server.Config{Name: name, Concurrency: conc, MaxInflight: f.maxInflight,
		MaxCPU: f.maxCPU, Grace: f.grace, Burn: cal, Info: info, SkipCPUClock: !f.cpuClock,
		Cgroup: own, CgroupError: ownMsg})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return usagef("--listen %s: %v", f.listen, err)
	}
	// One line on stdout with the real address, so a runner that asked for port 0
	// can find the instance.
	fmt.Fprintf(cmd.OutOrStdout(), "listening on http://%s name=%s gomaxprocs=%d concurrency=%s burn_iterations_per_ms=%.0f\n",
		ln.Addr(), name, n, conc, cal.IterationsPerMs)
	err = srv.Serve(cmd.Context(), ln)
	log.Info("stopped", "name", name)
	return err
}
