package cli

import (
	"context"
	"encoding/json"
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
)

type topFlags struct {
	interval, sample, window time.Duration
	once, json, tree, asc    bool
	listen, sort, filter     string
	root, mapping            string
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
quits. --once prints one table (or, with --json, one JSON array) after one
interval; --json alone prints a JSON line per group per interval. --listen
serves Prometheus metrics named as cAdvisor names them, plus
throttlelab_cpu_peak_period_cores and throttlelab_cpu_usage_cores.

Columns (--sort): ` + strings.Join(top.ColumnKeys(), ", ") + `.`,
		Example: `  sudo throttlelab top
  throttlelab top --once --tree
  throttlelab top --once --json --interval 2s | jq '.[] | select(.throttled_periods_ratio > 0.1)'
  throttlelab top --listen 127.0.0.1:9101`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return runTop(cmd, f) },
	}
	fl := cmd.Flags()
	fl.DurationVar(&f.interval, "interval", time.Second, "time each report covers")
	fl.DurationVar(&f.sample, "sample", 10*time.Millisecond, "how often usage and nr_periods are read")
	fl.DurationVar(&f.window, "window", 100*time.Millisecond, "peak window for groups without a quota")
	fl.BoolVar(&f.once, "once", false, "sample one interval, print, exit")
	fl.BoolVar(&f.json, "json", false, "JSON: with --once one array, otherwise one line per group per interval")
	fl.BoolVar(&f.tree, "tree", false, "lay groups out under their parents")
	fl.StringVar(&f.sort, "sort", "usage", "column to sort by")
	fl.BoolVar(&f.asc, "asc", false, "sort low first (numbers sort high first by default)")
	fl.StringVar(&f.filter, "filter", "", "only groups whose name or path holds this")
	fl.StringVar(&f.listen, "listen", "", "serve Prometheus metrics on this address (/metrics)")
	fl.StringVar(&f.root, "root", "/", "read /proc and the cgroup filesystems under this directory (a host's root mounted in a container)")
	fl.StringVar(&f.mapping, "weight-mapping", string(cgroup.WeightLinear), "how the runtime made v2 weights from shares, to read requests back: linear or quadratic")
	return cmd
}

func runTop(cmd *cobra.Command, f topFlags) error {
	if f.sample < 10*time.Millisecond {
		return usagef("--sample %s: give 10ms or more (reading every group costs CPU)", f.sample)
	}
	if f.interval < 10*time.Millisecond || f.interval < f.sample {
		return usagef("--interval %s: give at least 10ms and at least --sample (%s)", f.interval, f.sample)
	}
	if f.window < f.sample {
		return usagef("--window %s: give at least --sample (%s)", f.window, f.sample)
	}
	sortCol := top.ColumnIndex(f.sort)
	if sortCol < 0 {
		return usagef("--sort %q: want one of %s", f.sort, strings.Join(top.ColumnKeys(), ", "))
	}
	mapping := cgroup.WeightMapping(f.mapping)
	if _, err := cgroup.SharesToWeight(1024, mapping); err != nil {
		return usagef("--weight-mapping: %v", err)
	}
	// Numbers sort high first, names A to Z.
	view := top.View{Sort: sortCol, Desc: !f.asc && !top.Columns[sortCol].Left, Tree: f.tree, Filter: f.filter}

	var ln net.Listener
	if f.listen != "" {
		var err error
		if ln, err = net.Listen("tcp", f.listen); err != nil {
			return usagef("--listen %s: %v", f.listen, err)
		}
		defer ln.Close()
	}
	w, err := top.New(top.Options{Root: f.root, SampleEvery: f.sample, Window: f.window, Mapping: mapping})
	if err != nil {
		return err
	}
	defer w.Close()

	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	var collector *top.Collector
	if ln != nil {
		collector = top.NewCollector(mapping)
		srv := &http.Server{Handler: metricsMux(collector), ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
		fmt.Fprintf(cmd.ErrOrStderr(), "serving metrics on http://%s/metrics\n", ln.Addr())
	}
	out := cmd.OutOrStdout()
	publish := func(stats []top.Stats) {
		if collector != nil {
			collector.Update(stats)
		}
	}

	switch {
	case f.once:
		var got []top.Stats
		if err := w.Run(ctx, f.interval, func(s []top.Stats) bool { got = s; return false }); err != nil {
			return err
		}
		if got == nil {
			return exitError{code: 130, err: errors.New("interrupted before the end of the interval")}
		}
		rows := view.Rows(got)
		if f.json {
			list := make([]top.Stats, len(rows))
			for i, r := range rows {
				list[i] = *r.Stats
			}
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			return enc.Encode(list)
		}
		return top.WriteTable(out, w.Source(), rows, f.interval)
	case f.json:
		enc := json.NewEncoder(out)
		return w.Run(ctx, f.interval, func(s []top.Stats) bool {
			publish(s)
			for _, r := range view.Rows(s) {
				if enc.Encode(r.Stats) != nil {
					return false // stdout closed (a pipe to head, say)
				}
			}
			return true
		})
	case progress.IsTerminal(out):
		updates := make(chan []top.Stats, 1)
		errc := make(chan error, 1)
		go func() {
			errc <- w.Run(ctx, f.interval, func(s []top.Stats) bool {
				publish(s)
				select {
				case <-updates: // the screen has not taken the last one: replace it
				default:
				}
				updates <- s
				return true
			})
			close(updates)
		}()
		uiErr := tui.Run(ctx, cmd.InOrStdin(), out, tui.Config{Source: w.Source(), View: view, Interval: f.interval, Updates: updates})
		cancel()
		if err := <-errc; err != nil {
			return err
		}
		return uiErr
	case collector != nil:
		// Not a terminal, no JSON: just serve.
		return w.Run(ctx, f.interval, func(s []top.Stats) bool { publish(s); return true })
	default:
		// Not a terminal: a table every interval, like top -b.
		return w.Run(ctx, f.interval, func(s []top.Stats) bool {
			publish(s)
			err := top.WriteTable(out, w.Source(), view.Rows(s), f.interval)
			fmt.Fprintln(out)
			return err == nil
		})
	}
}

func metricsMux(c *top.Collector) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", c.Handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "throttlelab top: metrics at /metrics")
	})
	return mux
}
