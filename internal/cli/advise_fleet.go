package cli

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/fleet"
	"github.com/throttlelab/throttlelab/k8s"
	"github.com/throttlelab/throttlelab/k8s/resize"
	"github.com/throttlelab/throttlelab/units"
)

// fleetFlags are advise's cluster-wide inputs and outputs (advise.go calls
// addFleetFlags and, when one is set, runAdviseFleet).
type fleetFlags struct {
	prometheus, agent   string
	namespace, target   string
	output              string
	apply, yes          bool
	kubeconfig, context string
	timeout             time.Duration
}

// set reports whether advise is to read the fleet rather than one group
// (or a fleet flag was given without its input, which runAdviseFleet refuses).
func (f *fleetFlags) set() bool {
	return f.prometheus != "" || f.agent != "" || f.namespace != "" || f.target != "" || (f.output != "table" && f.output != "json") ||
		f.apply || f.yes || f.kubeconfig != "" || f.context != ""
}

func addFleetFlags(cmd *cobra.Command, f *fleetFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.prometheus, "prometheus", "", "every workload: read the agents' advice from this Prometheus (base URL, http://prometheus:9090)")
	fl.StringVar(&f.agent, "agent", "", "one node: read this throttlelab agent's /advice (base URL, http://10.0.0.5:9101)")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "with --prometheus: only this namespace")
	fl.StringVar(&f.target, "target-label", "", "with --prometheus: the agents' target (label target) to read advice for, when they have several")
	deprecatedAlias(cmd, "target", "target-label")
	fl.StringVarP(&f.output, "output", "o", "table", "table or json; with --prometheus/--agent also csv or patch (kubectl commands: in-place resizes)")
	formatAliasVar(cmd, &f.output, "json", "json")
	fl.BoolVar(&f.apply, "apply", false, "with --prometheus/--agent: resize the running pods in place (pods/resize); with --demand DIR: the pod-level limit; a server-side dry run unless --yes")
	fl.BoolVar(&f.yes, "yes", false, "with --apply: really resize")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "with --apply: kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	fl.StringVar(&f.context, "context", "", "with --apply: kubeconfig context (default the current one)")
	durationVar(fl, &f.timeout, "timeout", 2*time.Minute, "with --prometheus/--agent: give up on the queries after this long")
	cmd.Long += `

Every workload of a cluster, from the throttlelab agents (docs/fleet-advice.md):
  --prometheus URL [-n NS]   every node's agent, through the Prometheus that scrapes them
  --agent URL                one node's agent
one row per workload container (replicas merged on the one that needs most), now
against advised against krr's and the VPA's rules; -o table|json|csv|patch, or
--apply to resize the running pods in place (a server-side dry run unless --yes).
The agents advise for the targets they were given: --max-throttled and
--max-delay, when given, read the target of those values (as the agent names
its first target from the same flags), --target-label one by its label.`
	cmd.Example += `
  throttlelab advise --prometheus http://prometheus:9090 -n shop
  throttlelab advise --agent http://10.0.0.5:9101 -o csv
  throttlelab advise --prometheus http://prometheus:9090 -o patch > resize.sh
  throttlelab advise --prometheus http://prometheus:9090 -n shop --apply --yes`
}

// runAdviseFleet is advise --prometheus or --agent.
func runAdviseFleet(cmd *cobra.Command, args []string, af adviseFlags) error {
	f := af.fleet
	if err := f.check(args); err != nil {
		return err
	}
	var err error
	if f.target, err = fleetTarget(cmd, af); err != nil {
		return err
	}
	ctx, cancel := contextWithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	cs, pods, err := fleet.ReadWithPods(ctx, &http.Client{}, fleet.Source{Prometheus: f.prometheus, Agent: f.agent, Namespace: f.namespace, Target: f.target})
	if errors.Is(err, fleet.ErrTargets) || errors.Is(err, fleet.ErrNoSuchTarget) {
		return usagef("--target-label: %v", err)
	}
	if err != nil {
		return err
	}
	ms := fleet.Group(cs)
	if f.apply {
		// A pod's own advice (a pod-level limit) is resized with its
		// containers'.
		return applyResizes(cmd, f, append(fleet.PlanResizes(ms), fleet.PlanResizes(fleet.Group(pods))...))
	}
	return fleet.Write(cmd.OutOrStdout(), f.output, ms)
}

// fleetTarget is the agents' target advise --prometheus reads: the one
// --max-throttled and --max-delay name, as the agent names its first target
// from the same flags (agent --max-throttled 1% advises for
// "throttled=0.01"), or --target-label; with none of them, the agents' only
// target.
func fleetTarget(cmd *cobra.Command, f adviseFlags) (string, error) {
	fl := cmd.Flags()
	switch {
	case !fl.Changed("max-throttled") && !fl.Changed("max-delay"):
		return f.fleet.target, nil
	case f.fleet.target != "":
		return "", usagef("give --max-throttled/--max-delay or --target-label, not both: each names the agents' target")
	case f.fleet.agent != "":
		return "", usagef("--max-throttled and --max-delay go with --prometheus (an agent's /advice is for its first target)")
	}
	return targetName(f.maxThrottled, f.maxDelay)
}

// check refuses flags that do not go together.
func (f *fleetFlags) check(args []string) error {
	switch {
	case f.prometheus == "" && f.agent == "" && (f.output == "csv" || f.output == "patch"):
		return usagef("-o %s goes with --prometheus or --agent: one group's advice writes table or json", f.output)
	case f.prometheus == "" && f.agent == "":
		return usagef("--namespace, --target-label, --apply, --yes, --kubeconfig and --context go with --prometheus or --agent")
	case len(args) > 0:
		return usagef("advise --prometheus/--agent takes no RESULTS_DIR (got %s)", args[0])
	case f.prometheus != "" && f.agent != "":
		return usagef("advise: give --prometheus (every node) or --agent (one node), not both")
	case f.yes && !f.apply:
		return usagef("--yes goes with --apply")
	case f.agent != "" && (f.namespace != "" || f.target != ""):
		return usagef("--namespace and --target-label go with --prometheus (an agent's /advice is for its node and first target)")
	}
	return checkURLs(f.prometheus, f.agent)
}

func applyResizes(cmd *cobra.Command, f fleetFlags, rows []*fleet.Resize) error {
	cfg, err := k8s.RESTConfig(f.kubeconfig, f.context)
	if err != nil {
		return usagef("--apply: %v", err)
	}
	res, err := resize.Resize(cmd.Context(), cfg, resizeRows(rows), f.yes)
	return resized(cmd, rows, res, err, f.yes)
}

// resizeRows is the in-place resize of each row.
func resizeRows(rows []*fleet.Resize) []resize.Row {
	krows := make([]resize.Row, len(rows))
	for i, r := range rows {
		krows[i] = resize.Row{Namespace: r.Namespace, Pod: r.Pod, Container: r.Container, FromLimitMilli: r.FromLimitMilli, ToLimitMilli: r.ToLimitMilli, Patch: r.ResizePatch(), Skip: r.Skip}
	}
	return krows
}

// resized prints each row's resize result and, on a dry run (not yes),
// says that nothing changed; err is the resize's.
func resized(cmd *cobra.Command, rows []*fleet.Resize, res []resize.Result, err error, yes bool) error {
	if res != nil {
		writeResizes(cmd.OutOrStdout(), rows, res)
	}
	if err != nil {
		return err
	}
	if !yes {
		fmt.Fprintln(cmd.ErrOrStderr(), "dry run (server-side): nothing was changed; add --yes to resize")
	}
	return nil
}

func writeResizes(w io.Writer, rows []*fleet.Resize, res []resize.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tPOD\tCONTAINER\tLIMIT\tTO\tSTATUS\tREASON")
	for i, r := range rows {
		ctr := r.Container
		if ctr == "" {
			ctr = "(pod-level)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Namespace, r.Pod, ctr, milliOrDash(r.FromLimitMilli), milliOrDash(r.ToLimitMilli), res[i].Status, res[i].Reason)
	}
	tw.Flush()
}

func milliOrDash(m int64) string {
	if m <= 0 {
		return "-"
	}
	return units.FormatMilliCPU(m)
}
