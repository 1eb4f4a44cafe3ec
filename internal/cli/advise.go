package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/demand"
	"github.com/throttlelab/throttlelab/fleet"
	"github.com/throttlelab/throttlelab/internal/progress"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/report"
	"github.com/throttlelab/throttlelab/schemas"
	"github.com/throttlelab/throttlelab/startup"
	"github.com/throttlelab/throttlelab/units"
)

type adviseFlags struct {
	pid                  int
	cgroupPath, pod, csv string
	config, instance     string
	root                 string
	duration, maxDelay   time.Duration
	maxThrottled         string
	limits, periods      []string
	grid, phases, cores  int
	phasesGiven          bool // --phases given: exactly that many, else by need
	wallClock, all       bool
	details              bool // --details: the grid and everything behind the answer
	html, saveCSV        string
	fleet                fleetFlags    // --prometheus, --agent: advise_fleet.go
	workloads            workloadFlags // deploy/NAME, -l, -A: workload.go
	demandDir            string        // --demand DIR: one pod's containers' CSVs (advise_pod.go)
}

func newAdviseCmd() *cobra.Command {
	var f adviseFlags
	cmd := &cobra.Command{
		Use:   "advise [RESULTS_DIR | KIND/NAME...]",
		Short: "Recommend the smallest CPU limit (and burst) that keeps throttling under a target",
		Long: `Replay one group's CPU use, sampled every 10 ms, through the simulator's model of the
kernel's CFS bandwidth control, for a grid of limits (each without burst and with a
burst equal to the limit) at 10 phases of the period (on 5 minutes or more, 2 where they
agree: docs/advise.md), and recommend the smallest
limit that meets the target: --max-throttled (share of periods, default ` + pct(advise.DefaultMaxThrottled) + `) and/or
--max-delay (p99 of the delay the limit adds to the work).

Input, one of:
  --pid N, --cgroup PATH, --pod NS/NAME|UID   a live group, sampled for --duration
  RESULTS_DIR --config NAME [--instance NAME] a run recorded by throttlelab run
  --csv FILE                                   cumulative usage: a header time_ns,usage_ns,
                                               then one line per sample (ns, any origin)
  --demand DIR                                 one pod: its containers' CSVs (CONTAINER.csv, as
                                               check --demand reads them), per-container limits
                                               against one pod-level limit and both (-o patch:
                                               the pod template's spec.resources)

The window is cut into blocks of about 10 s: every number comes with the interval
[low-high] over the blocks, the recommendation meets the target in every block, and a
window whose blocks disagree is named non-stationary, with the blocks that differ and
how long to sample (docs/advise.md). The text is the answer in at most 15 lines: the
limit, why it and not the one below or the knee, the burst alternative, the coarse
recommenders, the warnings. --details adds every row of the grid (rows without burst,
then rows with burst, each by limit), the knee, how to set a burst and the
recommenders' table; -o json always has every row. A delay longer than the samples
can show is written >X (X the block, or the window).

Numbers are means over the phases (the kernel's period boundaries are unknown for
an unlimited group); WORST is the worst phase. Throttled share counts periods as
the kernel does (nr_throttled / nr_periods; nr_periods only counts periods in
which the group ran). Beside the advice: what krr (p95 of 75 s averages, and
simple_limit's p96), the VPA (p90 of 1-minute averages + 15%) and the mean would
set, and what each would cause. If the group was throttled while sampled, its
demand above its limit was hidden: the advice is then a lower bound, and says so.`,
		Example: `  sudo throttlelab advise --pid 4242
  sudo throttlelab advise --pod shop/checkout-7d9f --duration 2h --max-delay 10ms
  throttlelab advise results/f09-burn-flow/20261121-105420 --config unlimited
  throttlelab advise --csv usage.csv --limit 300m --limit 500m -o json`,
		Args: cobra.ArbitraryArgs, // RESULTS_DIR, or workloads (deploy/NAME ...)
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFormat(cmd, &f.fleet.output, fleet.Formats...); err != nil {
				return err
			}
			f.phasesGiven = cmd.Flags().Changed("phases")
			if len(args) > 1 || workloadArgs(args) || f.workloads.selector != "" || f.workloads.allNamespaces {
				return runAdviseWorkloads(cmd, args, f) // workload.go
			}
			return runAdvise(cmd, args, f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.pid, "pid", 0, "sample the cgroup of this process")
	fl.StringVar(&f.cgroupPath, "cgroup", "", "sample this cgroup: a path as in /proc/PID/cgroup, or its directory")
	fl.StringVar(&f.pod, "pod", "", "sample this Kubernetes pod on this node: NAMESPACE/NAME or its UID")
	fl.StringVar(&f.csv, "csv", "", "read cumulative usage from this CSV (time_ns,usage_ns)")
	fl.StringVar(&f.config, "config", "", "with RESULTS_DIR: the config whose first run to read")
	fl.StringVar(&f.instance, "instance", "", "with RESULTS_DIR: the instance or neighbour (default: the config's only instance)")
	fl.StringVar(&f.root, "root", "/", "read /proc and the cgroup filesystems under this directory")
	// Two minutes by default: krr's baseline needs 75 s of samples and the
	// VPA's 60 s, so a run on defaults shows the comparison, with margin and
	// a dozen 10 s blocks for the intervals. Baselines computed from less
	// would not be what krr or the VPA would set.
	durationVar(fl, &f.duration, "duration", 2*time.Minute, "how long to sample a live group (2m covers the krr and VPA baselines; 10m or more for a service, hours such as 24h for daily cycles)")
	fl.StringVar(&f.maxThrottled, "max-throttled", pct(advise.DefaultMaxThrottled), "target: highest throttled share of periods (5% or 0.05)")
	durationVar(fl, &f.maxDelay, "max-delay", 0, "target: highest p99 added delay (0: no delay target)")
	fl.StringSliceVar(&f.limits, "limit", nil, "add this limit (Kubernetes quantity, 300m) to the grid; repeatable")
	fl.StringSliceVar(&f.periods, "period", nil, "evaluate this CFS period too (default 100ms); repeatable")
	fl.IntVar(&f.grid, "grid", 25, "limits on the default grid")
	fl.IntVar(&f.phases, "phases", 0, "phases of the period to replay, exactly (not given: 10, or on 5m or more of samples 2, 0 and half a period, where their throttled shares agree within 0.5 points)")
	fl.IntVar(&f.cores, "cores", 0, "CPUs the group's held-back work can catch up on (default: the most it used in 10 ms, rounded up)")
	fl.BoolVar(&f.wallClock, "wall-clock", false, "the demand is bound to wall-clock time (spins until a deadline, polls): work that finds the quota spent is lost, not delayed")
	fl.BoolVar(&f.details, "details", false, "print the grid and everything behind the answer (the knee, how to set a burst, the recommenders' table)")
	fl.BoolVar(&f.all, "all", false, "replay every row of the grid with its delays, and print them as --details does (default: the rows around the knee replayed; the other rows, and in JSON the other points, are counted in one pass: exact throttled shares, no delays)")
	fl.StringVar(&f.html, "html", "", "also write an HTML report to this file")
	fl.StringVar(&f.demandDir, "demand", "", "one pod: its containers' CSVs in this directory (DIR/NAMESPACE/WORKLOAD of check --demand): per-container limits against one pod-level limit and both")
	fl.StringVar(&f.saveCSV, "save-csv", "", "write the samples to this CSV (time_ns,usage_ns), to advise again later")
	addFleetFlags(cmd, &f.fleet)
	addWorkloadFlags(cmd, &f.workloads)
	cmd.Long += `

Workloads as kubectl names them (kubectl throttlelab advise deploy/web -n shop;
also sts/, ds/, rs/, job/, cronjob/, pod/, or -l SELECTOR, -A): their
containers' advice from the agents on their nodes, through the API server
(pods/proxy; the kubeconfig as kubectl reads it, --kubeconfig, --context),
or with --prometheus from Prometheus. One workload container: the answer
above; several: the fleet table. Exit 2: no such workload; 3: the API
server, RBAC or a node's agent did not answer.`
	cmd.Example += `
  kubectl throttlelab advise deploy/web -n shop
  kubectl throttlelab advise -l app=web -A -o json`
	return cmd
}

// parseRatio reads "5%" or "0.05".
func parseRatio(s string) (float64, error) {
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q: give a share such as 5%% or 0.05", s)
	}
	if pct {
		v /= 100
	}
	if v > 1 {
		return 0, fmt.Errorf("%q: a share of periods is at most 100%%", s)
	}
	return v, nil
}

// adviseRequest turns the flags into what to evaluate.
func adviseRequest(f adviseFlags) (advise.Request, error) {
	maxThr, err := parseRatio(f.maxThrottled)
	if err != nil {
		return advise.Request{}, usagef("--max-throttled %v", err)
	}
	if !f.phasesGiven {
		f.phases = 0 // by need (advise.Evaluate)
	}
	if f.grid < 2 || (f.phasesGiven && f.phases < 1) || f.cores < 0 {
		return advise.Request{}, usagef("--grid needs at least 2, --phases at least 1, --cores 0 or more")
	}
	req := advise.Request{GridSize: f.grid, Target: advise.Target{MaxThrottled: maxThr, MaxDelay: f.maxDelay}, AllDelays: f.all,
		Options: advise.Options{Phases: f.phases, WallClock: f.wallClock}}
	for _, p := range f.periods {
		d, err := units.ParseDuration(p)
		if err != nil {
			return req, usagef("--period %s: %v", p, err)
		}
		req.Periods = append(req.Periods, d)
	}
	if len(req.Periods) == 0 {
		req.Periods = []time.Duration{100 * time.Millisecond}
	}
	for _, l := range f.limits {
		m, _, err := units.ParseMilliCPU(l)
		if err != nil {
			return req, usagef("--limit %s: %v", l, err)
		}
		for _, per := range req.Periods {
			if err := (advise.Point{LimitMilli: m, Period: per}).Check(); err != nil {
				return req, usagef("--limit %s: %v", l, err)
			}
		}
		req.Limits = append(req.Limits, m)
	}
	return req, nil
}

// adviseInputFlags names the flag that carries each field of demand.Input,
// for the errors about them.
var adviseInputFlags = map[string]string{"CSV": "--csv", "Config": "--config", "ResultsDir": "RESULTS_DIR", "Duration": "--duration"}

// adviseUsage is the usage error (exit 2, naming the flag) for an advise
// error the user must fix, or nil.
func adviseUsage(err error) error {
	var ie *demand.InputError
	switch {
	case errors.As(err, &ie) && ie.Field == "":
		return usagef("give exactly one input: --pid, --cgroup, --pod, --csv or a RESULTS_DIR (see --help)")
	case errors.Is(err, record.ErrSeveralInstances):
		return usagef("%v: give --instance", err)
	case errors.As(err, &ie):
		return usagef("%s: %v", adviseInputFlags[ie.Field], err)
	case errors.Is(err, cfs.ErrTooShort) || errors.Is(err, advise.ErrQuotaTooSmall) || errors.Is(err, advise.ErrBurstTooLarge):
		return usagef("%v", err)
	}
	return nil
}

func runAdvise(cmd *cobra.Command, args []string, f adviseFlags) error {
	if f.demandDir != "" {
		return runAdvisePod(cmd, args, f) // advise_pod.go
	}
	if f.fleet.set() {
		return runAdviseFleet(cmd, args, f)
	}
	req, err := adviseRequest(f)
	if err != nil {
		return err
	}
	in := demand.Input{Pid: f.pid, CgroupPath: f.cgroupPath, Pod: f.pod, CSV: f.csv, Config: f.config, Instance: f.instance,
		Root: f.root, Duration: f.duration, Cores: f.cores}
	if len(args) == 1 {
		in.ResultsDir = args[0]
	}
	rt := adviseRuntime(in) // once, before sampling: not every sample
	var finish func()
	in.Progress, finish = samplingBar(cmd)
	d, sampled, err := demand.Load(cmd.Context(), in, slices.Min(req.Periods))
	finish()
	if err == nil && f.saveCSV != "" {
		err = writeDemandCSV(f.saveCSV, d)
	}
	var a *advise.Advice
	if err == nil {
		a, err = rt.advise(d, req, sampled)
	}
	if err == nil && f.html != "" {
		err = writeAdviseHTML(f.html, d, a)
	}
	if err == nil {
		advise.AddStartupBoost(a, d, startup.Options{}, startup.Target{}) // a start-up's boost, if it has one
	}
	switch {
	case adviseUsage(err) != nil:
		return adviseUsage(err)
	case err != nil:
		return err
	case f.fleet.output == "json":
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(schemas.Doc(schemas.KindAdvice, a))
	case f.details || f.all:
		return advise.WriteTextGrid(cmd.OutOrStdout(), a)
	}
	// The start-up's boost, if it has one, before the hint.
	more := append(advise.StartupLines(a), "(every limit evaluated, the knee and how to set a burst: --details)")
	return advise.WriteBrief(cmd.OutOrStdout(), a, strings.Join(more, "\n"))
}

// samplingBar is a progress bar on stderr for a live group's sampling
// (demand.Input.Progress), and what ends it once sampling is over.
func samplingBar(cmd *cobra.Command) (func(string, time.Duration) func(time.Duration), func()) {
	var bar *progress.Bar
	start := func(name string, total time.Duration) func(time.Duration) {
		bar = progress.New(cmd.ErrOrStderr(), "sampling "+name, int(total/time.Millisecond))
		bar.Millis(true)
		return func(done time.Duration) { bar.Set(int(done / time.Millisecond)) }
	}
	return start, func() {
		if bar != nil {
			bar.Finish()
		}
	}
}

func writeAdviseHTML(path string, d *advise.Demand, a *advise.Advice) error {
	fh, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	if err := report.WriteAdviceHTML(fh, d, a); err != nil {
		fh.Close()
		return fmt.Errorf("--html %s: %w", path, err)
	}
	return fh.Close()
}

func writeDemandCSV(path string, d *advise.Demand) error {
	fh, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--save-csv: %w", err)
	}
	if err := demand.WriteCSV(fh, d); err != nil {
		fh.Close()
		return fmt.Errorf("--save-csv: %w", err)
	}
	return fh.Close()
}
