package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/internal/progress"
	"github.com/throttlelab/throttlelab/top"
	"github.com/throttlelab/throttlelab/top/tui"
	"github.com/throttlelab/throttlelab/watch"
)

type topFlags struct {
	interval, sample, window time.Duration
	once, tree, asc          bool
	output                   string
	listen, sort, filter     string
	root, mapping            string
	// cluster-wide (workload.go): every node's agent through the API server
	allNamespaces       bool
	namespace           string
	kubeconfig, context string
}

func newTopCmd() *cobra.Command {
	var f topFlags
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Watch every cgroup's CPU use, peaks within a period, and throttling",
		Long: `Watch every cgroup with CPU accounting on this host (cgroup v1, v2 or hybrid),
named as its owner knows it: Kubernetes pods and containers, container runtimes'
scopes, systemd slices and services, throttlelab's own groups.

Usage and nr_periods are sampled every --sample (10 ms) from files kept open;
every --interval the table shows each group's limit, burst and request, its mean
use, the highest use within one of its own CFS periods (PEAK; groups without a
quota: over 100 ms windows, marked *), the throttled share of periods and
throttled time per second, bursts, CPU pressure (v2) and processes.

On a terminal the table is interactive: s/S or </> picks the sort column, r
reverses it, / filters by name, t switches tree and flat, p or space pauses, q
quits. --once prints one table (or, with -o json, one JSON array) after one
interval; -o json alone prints a JSON line per group per interval. --listen
serves Prometheus metrics named as cAdvisor names them, plus
throttlelab_cpu_peak_period_cores and throttlelab_cpu_usage_cores.

Columns (--sort): ` + strings.Join(top.ColumnKeys(), ", ") + `.`,
		Example: `  sudo throttlelab top
  throttlelab top --once --tree
  throttlelab top --once -o json --interval 2s | jq '.items[] | select(.throttled_periods_ratio > 0.1)'
  throttlelab top --listen 127.0.0.1:9101`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return runTop(cmd, f) },
	}
	fl := cmd.Flags()
	fl.DurationVar(&f.interval, "interval", time.Second, "time each report covers")
	fl.DurationVar(&f.sample, "sample", 10*time.Millisecond, "how often usage and nr_periods are read")
	fl.DurationVar(&f.window, "window", 100*time.Millisecond, "peak window for groups without a quota")
	fl.BoolVar(&f.once, "once", false, "sample one interval, print, exit")
	fl.StringVarP(&f.output, "output", "o", "table", "table or json (with --once one array, otherwise one line per group per interval)")
	formatAliasVar(cmd, &f.output, "json", "json")
	fl.BoolVar(&f.tree, "tree", false, "lay groups out under their parents")
	fl.StringVar(&f.sort, "sort", "usage", "column to sort by")
	fl.BoolVar(&f.asc, "asc", false, "sort low first (numbers sort high first by default)")
	fl.StringVar(&f.filter, "filter", "", "only groups whose name or path holds this")
	fl.StringVar(&f.listen, "listen", "", "serve Prometheus metrics on this address (/metrics)")
	fl.StringVar(&f.root, "root", "/", "read /proc and the cgroup filesystems under this directory (a host's root mounted in a container)")
	fl.StringVar(&f.mapping, "weight-mapping", string(cgroup.WeightLinear), "how the runtime made v2 weights from shares, to read requests back: linear or quadratic")
	fl.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "the cluster: every node's agent through the API server (kubectl throttlelab top -A; --sort throttled or delay)")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "the cluster, one namespace's containers")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "with -A/-n: kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	fl.StringVar(&f.context, "context", "", "with -A/-n: kubeconfig context (default the current one)")
	cmd.Example += `
  kubectl throttlelab top -A --sort delay -o json`
	return cmd
}

func runTop(cmd *cobra.Command, f topFlags) error {
	if err := outputFormat(cmd, &f.output, "table", "json"); err != nil {
		return err
	}
	if f.allNamespaces || f.namespace != "" {
		return runTopCluster(cmd, f)
	}
	if err := top.CheckTiming(f.sample, f.interval, f.window); err != nil {
		return usagef("--%v", err)
	}
	sortCol := top.ColumnIndex(f.sort)
	if sortCol < 0 {
		return usagef("--sort %q: want one of %s", f.sort, strings.Join(top.ColumnKeys(), ", "))
	}
	mapping := cgroup.WeightMapping(f.mapping)
	if _, err := cgroup.SharesToWeight(1024, mapping); err != nil {
		return usagef("--weight-mapping: %v", err)
	}
	out := cmd.OutOrStdout()
	// Numbers sort high first, names A to Z.
	d := top.Display{Interval: f.interval, Once: f.once, JSON: f.output == "json", Out: out,
		View: top.View{Sort: sortCol, Desc: !f.asc && !top.Columns[sortCol].Left, Tree: f.tree, Filter: f.filter}}
	if f.listen != "" {
		ln, err := net.Listen("tcp", f.listen)
		if err != nil {
			return usagef("--listen %s: %v", f.listen, err)
		}
		d.Metrics = watch.NewCollector(mapping)
		srv := &http.Server{Handler: top.MetricsMux(d.Metrics), ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
		fmt.Fprintf(cmd.ErrOrStderr(), "serving metrics on http://%s/metrics\n", ln.Addr())
	}
	w, err := watch.New(watch.Options{Root: f.root, SampleEvery: f.sample, Window: f.window, Mapping: mapping})
	if err != nil {
		return err
	}
	defer w.Close()
	if progress.IsTerminal(out) {
		d.Screen = func(ctx context.Context, updates <-chan []watch.Stats) error {
			return tui.Run(ctx, cmd.InOrStdin(), out, tui.Config{Source: w.Source(), View: d.View, Interval: f.interval, Updates: updates})
		}
	}
	err = top.Show(cmd.Context(), w, d)
	if errors.Is(err, top.ErrNoReport) {
		return exitError{code: ExitInterrupted, err: err}
	}
	return err
}
