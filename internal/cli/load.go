package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/internal/progress"
	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/record"
)

type loadFlags struct {
	mode          string
	targets       []string
	targetsFile   string
	balancer      loadgen.BalancerSpec
	request       string
	tiles         loadgen.TileSet
	burn          loadgen.Burn
	workers       int
	ramp          loadgen.Ramp
	step          time.Duration
	rate          float64
	arrivals      string
	sources       int
	on, off       time.Duration
	duration      time.Duration
	requests      int64
	timeout       time.Duration
	grace         time.Duration
	maxInflight   int
	newConnection bool
	noVerify      bool
	seed          uint64
	out           string
	gomaxprocs    int
}

func newLoadCmd() *cobra.Command { return newLoadCmdInto(new(loadFlags)) }

// newLoadCmdInto is the load command parsing its flags into f.
func newLoadCmdInto(f *loadFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "load",
		Short: "Drive workload server instances and record every request",
		Long: `Drive one or more throttlelab serve instances and record every request.

Modes: image (closed loop over tiles, each once, checked against the catalogue),
ramp (closed loop, workers FROM..TO), rate (open loop, constant or Poisson, latency
from the intended send time), onoff (Markov on/off sources), probe (steady low-rate
open loop), sequential (one request after another).`,
		Example: `  throttlelab load --mode image --target http://127.0.0.1:8080 --workers 8 --tiles sample:500 --out results/img
  throttlelab load --mode rate --rate 200 --arrivals poisson --request api --duration 30s --target http://127.0.0.1:8080
  throttlelab load --mode ramp --ramp 1:8 --step 10s --tiles class:small --target http://127.0.0.1:8080 --target http://127.0.0.1:8081`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return runLoad(cmd, *f) },
	}
	// The defaults of the flags that hold parsed values, set as StringVar
	// would set them.
	f.balancer, f.burn, f.ramp = loadgen.BalancerSpec{}, loadgen.Burn{CPU: 5 * time.Millisecond}, loadgen.Ramp{From: 1, To: 8}
	f.tiles = loadgen.TileSet{Kind: loadgen.TilesAll}
	fl := cmd.Flags()
	fl.StringVar(&f.mode, "mode", "", "image, ramp, rate, onoff, probe or sequential (required)")
	fl.StringArrayVar(&f.targets, "target", nil, "instance base URL, e.g. http://127.0.0.1:8080 (repeatable)")
	fl.StringVar(&f.targetsFile, "targets-file", "", "file with one target URL per line")
	fl.Var(&f.balancer, "balancer", "random, roundrobin, ingress:K, least or p2c")
	fl.StringVar(&f.request, "request", "tile", "tile, burn or api")
	fl.Var(&f.tiles, "tiles", "tile set: all, sample:N, class:small|medium|large or iters:LO-HI (tiles of LO to HI iterations)")
	fl.Var(&f.burn, "burn", "burn request: cpu=DURATION or iterations=N")
	fl.IntVar(&f.workers, "workers", 1, "closed-loop workers (image mode)")
	fl.Var(&f.ramp, "ramp", "ramp mode: workers FROM:TO")
	durationVar(fl, &f.step, "step", 10*time.Second, "ramp mode: duration of each step")
	rateVar(fl, &f.rate, "rate", 0, "rate and probe modes: requests per second (probe default 10); onoff: each source's Poisson rate while on (0: back to back)")
	fl.StringVar(&f.arrivals, "arrivals", "constant", "rate and probe modes: constant or poisson")
	fl.IntVar(&f.sources, "sources", 64, "onoff mode: independent sources")
	durationVar(fl, &f.on, "on", 100*time.Millisecond, "onoff mode: mean ON period (exponential)")
	durationVar(fl, &f.off, "off", time.Second, "onoff mode: mean OFF period (exponential)")
	durationVar(fl, &f.duration, "duration", 0, "stop after this long")
	fl.Int64Var(&f.requests, "requests", 0, "stop after this many requests")
	durationVar(fl, &f.timeout, "timeout", 30*time.Second, "per-request timeout")
	durationVar(fl, &f.grace, "grace", 10*time.Second, "on Ctrl-C, how long in-flight requests may finish")
	fl.IntVar(&f.maxInflight, "max-inflight", 1000, "open loop: most requests in flight at once")
	fl.BoolVar(&f.newConnection, "new-connection", false, "open a new connection for every request (default: keep-alive)")
	fl.BoolVar(&f.noVerify, "no-verify", false, "do not check tiles against the catalogue")
	fl.Uint64Var(&f.seed, "seed", 1, "seed for tile order, balancer and arrival choices")
	fl.StringVar(&f.out, "out", "", "directory for requests.csv, summary.json and latency.hdr")
	fl.IntVar(&f.gomaxprocs, "gomaxprocs", 0, "GOMAXPROCS of the load generator (0: the CPUs it may run on)")
	return cmd
}

func (f loadFlags) config(cmd *cobra.Command) (loadgen.Config, error) {
	c := loadgen.Config{
		Mode: loadgen.Mode(f.mode), Balancer: f.balancer,
		Workload: loadgen.WorkloadSpec{Kind: loadgen.Kind(f.request), Tiles: f.tiles, Burn: f.burn},
		Workers:  f.workers, RampStep: f.step, Rate: f.rate, Arrivals: f.arrivals,
		Sources: f.sources, OnMean: f.on, OffMean: f.off, Duration: f.duration, Requests: f.requests,
		Timeout: f.timeout, Grace: f.grace, MaxInflight: f.maxInflight, NewConnection: f.newConnection,
		NoVerify: f.noVerify, Seed: f.seed,
	}
	if f.mode == "" {
		return c, usagef("--mode is required: one of %v", loadgen.Modes)
	}
	// A flag of another mode is refused, not ignored.
	if slices.Contains(loadgen.Modes, c.Mode) {
		for _, name := range []string{"workers", "ramp", "step", "rate", "arrivals", "sources", "on", "off", "max-inflight"} {
			if cmd.Flags().Changed(name) {
				if err := loadgen.NotInMode(c.Mode, name); err != nil {
					return c, usagef("--%v", err)
				}
			}
		}
	}
	for flag, kind := range map[string]loadgen.Kind{"tiles": loadgen.KindTile, "burn": loadgen.KindBurn} {
		if cmd.Flags().Changed(flag) && c.Workload.Kind != kind {
			return c, usagef("--%s does not apply to --request %s: it is for --request %s", flag, c.Workload.Kind, kind)
		}
	}
	// Flags where 0 would otherwise mean "the default" to the library.
	if f.workers < 1 {
		return c, usagef("--workers %d: must be at least 1", f.workers)
	}
	if f.timeout <= 0 {
		return c, usagef("--timeout %s: must be positive", f.timeout)
	}
	if f.maxInflight < 1 {
		return c, usagef("--max-inflight %d: must be at least 1", f.maxInflight)
	}
	if c.Mode == loadgen.ModeRamp {
		c.Ramp = f.ramp
	}
	// Every other rule is the load generator's own.
	if err := c.Check(); err != nil {
		return c, flagError(err)
	}
	targets, err := readTargets(f.targets, f.targetsFile)
	if err != nil {
		return c, err
	}
	c.Targets = targets
	return c, nil
}

// flagError names the flag of a bad load setting: loadgen's FieldError says
// which setting, and the flags are named like the settings.
func flagError(err error) error {
	var fe *loadgen.FieldError
	if !errors.As(err, &fe) {
		return usageError{err}
	}
	if strings.HasPrefix(fe.Msg, fe.Field+" ") {
		return usagef("--%s", fe.Msg)
	}
	return usagef("--%s: %s", fe.Field, fe.Msg)
}

// readTargets collects --target and --targets-file URLs and checks their form.
func readTargets(flagTargets []string, file string) ([]string, error) {
	all := append([]string(nil), flagTargets...)
	if file != "" {
		fh, err := os.Open(file)
		if err != nil {
			return nil, usagef("--targets-file: %v", err)
		}
		defer fh.Close()
		more, err := loadgen.ReadTargets(fh)
		if err != nil {
			return nil, usagef("--targets-file %s: %v", file, err)
		}
		all = append(all, more...)
	}
	if len(all) == 0 {
		return nil, usagef("no targets: give --target URL (repeatable) or --targets-file")
	}
	all, err := loadgen.CleanTargets(all)
	if err != nil {
		return nil, usagef("--%v", err)
	}
	return all, nil
}

// checkTargets makes sure every target answers /healthz before the load starts.
func checkTargets(ctx context.Context, targets []string) error {
	if err := loadgen.CheckTargets(ctx, targets); err != nil {
		return usagef("--%v", err)
	}
	return nil
}

func runLoad(cmd *cobra.Command, f loadFlags) error {
	cfg, err := f.config(cmd)
	if err != nil {
		return err
	}
	if err := setGOMAXPROCS(f.gomaxprocs, "the CPUs it may run on", runtime.NumCPU); err != nil {
		return err
	}
	ctx := cmd.Context()
	if err := checkTargets(ctx, cfg.Targets); err != nil {
		return err
	}
	if f.out != "" {
		records, err := createIn(f.out, record.RequestsFile)
		if err != nil {
			return usagef("--out: %v", err)
		}
		defer records.Close()
		cfg.Records = records
	}
	bar := loadBar(cmd, &cfg)
	start := time.Now()
	res, runErr := loadgen.Run(ctx, cfg)
	if res == nil {
		return usageError{runErr}
	}
	bar.Finish()
	out := cmd.OutOrStdout()
	res.Summary.WriteTable(out)
	if f.out != "" {
		if err := writeLoadResults(f.out, res, start); err != nil {
			return err
		}
		fmt.Fprintf(out, "records, summary and histogram in %s\n", f.out)
	} else {
		fmt.Fprintln(out, "(records not kept: use --out DIR to keep requests.csv, summary.json and latency.hdr)")
	}
	if runErr != nil {
		return runErr
	}
	if err := res.Summary.Failed(); err != nil {
		return err
	}
	if res.Summary.Interrupted {
		return exitError{code: ExitInterrupted, err: errors.New("interrupted: the summary above covers what was done")}
	}
	return nil
}

// loadBar is the progress bar of a load, fed by cfg.Progress: loads bounded
// by a request count or a tile set count requests; the rest run for a time,
// which the bar shows as durations.
func loadBar(cmd *cobra.Command, cfg *loadgen.Config) *progress.Bar {
	bar := progress.New(cmd.ErrOrStderr(), string(cfg.Mode), 0)
	bar.Millis(cfg.Requests == 0 && cfg.Mode != loadgen.ModeImage)
	cfg.Progress = func(done, total int64) { bar.SetTotal(int(total)); bar.Set(int(done)) }
	return bar
}

// createIn creates name in dir, making dir.
func createIn(dir, name string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return os.Create(filepath.Join(dir, name))
}

func writeLoadResults(dir string, res *loadgen.Result, start time.Time) error {
	err := writeFileAtomic(filepath.Join(dir, record.SummaryFile), func(w *os.File) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res.Summary)
	})
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, record.HistFile), func(w *os.File) error {
		return loadgen.WriteHistogram(w, res.Histogram, start)
	})
}
