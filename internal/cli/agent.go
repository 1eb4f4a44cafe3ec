package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/agent"
	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/k8s/agentmanifest"
	"github.com/throttlelab/throttlelab/k8s/manifest"
	"github.com/throttlelab/throttlelab/startup"
)

type agentFlags struct {
	listen, root, node, mapping string
	stateDir                    string
	window, block, chunk        time.Duration
	sample, interval, startup   time.Duration
	maxThrottled                string
	maxDelay                    time.Duration
	objectives                  []string
	owners                      bool
	startupShare                string
}

// agentSettingFlags names the flag that carries each of agent.Settings'
// fields, for the errors about them.
var agentSettingFlags = map[string]string{"Sample": "--sample", "Interval": "--interval", "Mapping": "--weight-mapping",
	"Targets": "--max-throttled/--max-delay/--objective", "Window": "--window/--block/--chunk", "Startup": "--startup", "StartupShare": "--startup-share", "StateDir": "--state-dir"}

func newAgentCmd() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Serve every container's advice and throttling on this node as Prometheus metrics and JSON (one per node)",
		Long: `Sample every container of this node every 10 ms (as top does), keep a
bounded summary of each one's demand over a rolling window, and serve:

  /metrics   top's metrics (cAdvisor's names and the peak within a period) for
             the containers, and per container the advised limit and burst for
             each target, the predicted throttled share and p99 added delay
             at the current, advised, krr and VPA limits, krr's and the VPA's
             rules from the same data (docs/fleet.md lists every series)
  /advice    every container's advice, the fields of advise --json
  /evaluate  ?namespace=&pod=&container=&limit=500m&burst=0: one candidate

The summary keeps the raw samples of the last --chunk only: each chunk is
replayed through the quota model at a fixed ladder of limits and folded into
blocks of --block; blocks older than --window are dropped. What a restart
loses: without --state-dir the whole summary (the window starts again); with
it, the demand since the last checkpoint (5 minutes at most, one chunk on a
clean exit). A container that appears while the agent runs is starting: its
first --startup is kept apart from the advice (a start-up asks once for CPU
the steady state does not) and reported on its own in /advice.

The first target is --max-throttled and --max-delay, as advise and check take
them (default ` + pct(advise.DefaultMaxThrottled) + ` throttled periods); --objective adds more, each
written as the metrics' target label shows it (throttled=0.01, delay=10ms, or
both joined by a comma). Given --objective alone, its first is the first.`,
		Example: `  throttlelab agent --listen :9101 --root /host --node "$NODE_NAME"
  throttlelab agent --listen 127.0.0.1:9101 --window 1h --max-throttled 1% --objective delay=10ms`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return runAgent(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", ":"+strconv.Itoa(agent.DefaultPort), "serve /metrics, /advice and /evaluate on this address")
	fl.StringVar(&f.root, "root", "/", "read /proc, the cgroup filesystems and /var/log/pods under this directory (the host's root mounted in a container)")
	fl.StringVar(&f.node, "node", os.Getenv("NODE_NAME"), "node name for the node label and the owner lookup (default $NODE_NAME, else the host name)")
	fl.StringVar(&f.mapping, "weight-mapping", string(cgroup.WeightLinear), "how the runtime made v2 weights from shares, to read requests back: linear or quadratic")
	durationVar(fl, &f.window, "window", 24*time.Hour, "how far back the summary reaches")
	durationVar(fl, &f.block, "block", time.Hour, "the window is kept and dropped in blocks of this length")
	durationVar(fl, &f.chunk, "chunk", time.Minute, "raw samples are kept this long, then replayed and dropped")
	durationVar(fl, &f.sample, "sample", 10*time.Millisecond, "sampling interval")
	durationVar(fl, &f.interval, "interval", 10*time.Second, "how often settings, top's metrics and the list of containers are refreshed (a new container is found within 0.1 s of its cgroup being made, by inotify; within this where inotify cannot be had)")
	durationVar(fl, &f.startup, "startup", time.Minute, "a container that appears while the agent runs: this much of its demand is its start-up, kept apart from the advice (0 keeps it in)")
	fl.StringVar(&f.startupShare, "startup-share", pct(startup.DefaultShare), "a start-up's boost brings it within this share of its unlimited length (10% or 0.1)")
	fl.StringVar(&f.maxThrottled, "max-throttled", pct(advise.DefaultMaxThrottled), "first target: highest throttled share of periods (5% or 0.05); /advice and at=\"advised\" use it")
	durationVar(fl, &f.maxDelay, "max-delay", 0, "first target: highest p99 added delay (0: no delay target)")
	fl.StringArrayVar(&f.objectives, "objective", nil, "another target to advise for (throttled=0.01, delay=10ms, or both joined by a comma); repeatable, at most 4 targets in all")
	deprecatedAlias(cmd, "target", "objective")
	fl.StringVar(&f.stateDir, "state-dir", "", "checkpoint the summaries here every 5 minutes and on exit, and start from them (a restart then loses at most the last minutes)")
	fl.BoolVar(&f.owners, "owners", false, "look up the pods' owners (Deployment, StatefulSet, ...) in the Kubernetes API (in a pod, with its service account; needs list on pods)")
	return cmd
}

func runAgent(cmd *cobra.Command, f agentFlags) error {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(agent.GCPercent)
	}
	targets, err := agentTargets(cmd, f)
	if err != nil {
		return err
	}
	cfg, err := agent.Settings{StartupShare: f.startupShare, Root: f.root, Node: f.node, Mapping: f.mapping, StateDir: f.stateDir, Window: f.window, Block: f.block,
		Chunk: f.chunk, Sample: f.sample, Interval: f.interval, Startup: f.startup, Targets: targets}.Config(slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
	var se *agent.SettingError
	if errors.As(err, &se) {
		return usagef("%s: %v", agentSettingFlags[se.Setting], err)
	}
	if err != nil {
		return err
	}
	if f.owners {
		o, err := agent.InClusterOwners(cfg.Node)
		if err != nil {
			return usagef("--owners: %v", err)
		}
		cfg.Owners = o.Lookup
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return usagef("--listen %s: %v", f.listen, err)
	}
	defer ln.Close()
	a, err := agent.New(cfg)
	if err != nil {
		return err
	}
	if f.stateDir != "" {
		n, err := a.LoadState(f.stateDir)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "restored %d container summaries from %s\n", n, f.stateDir)
	}
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	fmt.Fprintf(cmd.ErrOrStderr(), "throttlelab agent on %s (cgroup %s): http://%s/metrics\n", cfg.Node, a.Source().Version, ln.Addr())
	err = a.Run(cmd.Context())
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// agentTargets are the agent's targets: --max-throttled and --max-delay
// first, then every --objective; --objective alone (the old --target form)
// gives all of them.
func agentTargets(cmd *cobra.Command, f agentFlags) ([]string, error) {
	fl := cmd.Flags()
	if len(f.objectives) > 0 && !fl.Changed("max-throttled") && !fl.Changed("max-delay") {
		return f.objectives, nil
	}
	name, err := targetName(f.maxThrottled, f.maxDelay)
	if err != nil {
		return nil, err
	}
	return append([]string{name}, f.objectives...), nil
}

// targetName is the target --max-throttled and --max-delay give, named as
// the agent's metrics label it ("throttled=0.05", "throttled=0.05,delay=10ms"):
// the agent's first target, and the one advise --prometheus reads when they
// are given.
func targetName(maxThrottled string, maxDelay time.Duration) (string, error) {
	maxThr, err := parseRatio(maxThrottled)
	if err != nil {
		return "", usagef("--max-throttled %v", err)
	}
	name := agent.TargetName(advise.Target{MaxThrottled: maxThr, MaxDelay: maxDelay})
	if name == "" {
		return "", usagef("--max-throttled %s: give a share under 100%%, or a --max-delay", maxThrottled)
	}
	return name, nil
}

// runK8sRenderAgent prints the agent's manifests.
func runK8sRenderAgent(cmd *cobra.Command, f k8sRenderFlags) error {
	if f.quick || f.cores != 0 {
		return usagef("--quick and --cores are for experiments, not the agent")
	}
	// The agent's flags are checked here, as the agent will read them.
	probe := newAgentCmd()
	if err := probe.ParseFlags(f.agentArgs); err != nil {
		return usagef("--agent-arg: %v", err)
	}
	opt, err := f.agentOptions()
	if err != nil {
		return err
	}
	m, err := agentmanifest.Render(opt)
	var oe *manifest.OptionError
	switch {
	case errors.As(err, &oe):
		return usagef("--%s: %s", oe.Option, oe.Msg)
	case err != nil:
		return err
	}
	return m.WriteYAML(cmd.OutOrStdout())
}
