package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/fleet"
	"github.com/throttlelab/throttlelab/schemas"
)

type checkFlags struct {
	prometheus, agent, demand string
	namespace, target         string
	maxThrottled              string
	maxDelay, timeout         time.Duration
	verbose, allowMissing     bool
	lint                      bool
	output                    string
	base                      []string
}

func newCheckCmd() *cobra.Command {
	var f checkFlags
	cmd := &cobra.Command{
		Use:   "check MANIFESTS...",
		Short: "Check manifests' CPU limits against measured demand; fail when one would break the budget",
		Long: `Read Kubernetes manifests (files, directories, - for stdin: kubectl, kustomize or
helm output, many documents, Lists), find every container of a Deployment,
StatefulSet, DaemonSet, ReplicaSet, Job, CronJob or Pod, and predict what its
proposed CPU limit does to the demand measured for it:

  --prometheus URL  the agents' exported predictions where the proposed limit is one
                    they evaluate (current, advised, krr's, the VPA's); any other is
                    asked of the agent that measured the pod (found in Prometheus'
                    /api/v1/targets), at its /evaluate
  --agent URL       one agent's /advice and /evaluate
  --demand DIR      recorded demand, DIR/NAMESPACE/WORKLOAD/CONTAINER.csv (advise's CSV:
                    advise --save-csv), replayed here through advise's model

A pod-level CPU limit (spec.resources of the pod, Kubernetes 1.34+) is
replayed on the pod's containers' demand summed (--demand: their CSVs summed
on their times) and reported on its own line; --prometheus and --agent read
the pod's own series (an agent keeps them where the running pod has a
pod-level limit), and say so where there are none.

Each replica is predicted; the worst one counts. Exit status 1 when any
container is over budget, with one line per violation:
  FILE:LINE: NAMESPACE/KIND/NAME/CONTAINER: predicted X vs budget Y
A container without a limit is listed as not checked. A container with a
limit and no measured demand (a typo in --demand, a workload no agent has
seen) is an error, exit 2, naming where demand was looked for, unless
--allow-missing-demand lists it as not checked. Bad input (not YAML, not a
Kubernetes object, a bad quantity, a bad CSV, no such --demand directory)
exits 2. A source that cannot be reached or has no data (Prometheus or the
agent down, no agent series) exits 3: an outage is never read as a
violation (docs/cli.md: the exit codes of every command).

--lint checks, with no demand source, what needs no history: requests.cpu
above limits.cpu, a limit under the kernel's minimum quota (1 ms per 100 ms
period: 10m), a limit without a request, container limits above or summing
above a pod-level limit, a pod-level limit under the containers' requests,
GOMAXPROCS or -XX:ActiveProcessorCount above the limit's CPUs,
a change of the pod's QoS class (pod-level resources counted) against --base (the manifests before the change), and in throttlelab
experiment specs what the spec's parser refuses (a burst above the quota
among them); one line per finding, FILE:LINE: NAME: what is wrong, exit 1
when there is any.`,
		Example: `  kustomize build overlays/prod | throttlelab check --prometheus http://prometheus:9090 -
  helm template shop ./chart | throttlelab check --prometheus $PROM --max-throttled 2% --max-delay 20ms -
  throttlelab check deploy/ --demand recorded/
  throttlelab check --lint examples/
  throttlelab check --lint --base old/deploy.yaml deploy.yaml`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("check: give manifests: files, directories, or - for stdin (see --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFormat(cmd, &f.output, "table", "json"); err != nil {
				return err
			}
			return runCheck(cmd, args, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.prometheus, "prometheus", "", "measured demand: the agents' series in this Prometheus (base URL)")
	fl.StringVar(&f.agent, "agent", "", "measured demand: this throttlelab agent (base URL)")
	fl.StringVar(&f.demand, "demand", "", "measured demand: recorded CSVs, DIR/NAMESPACE/WORKLOAD/CONTAINER.csv")
	fl.StringVarP(&f.namespace, "namespace", "n", "default", "the namespace of objects that name none")
	fl.StringVar(&f.target, "target-label", "", "with --prometheus: the agents' target (label target), when they have several")
	deprecatedAlias(cmd, "target", "target-label")
	fl.StringVar(&f.maxThrottled, "max-throttled", pct(advise.DefaultMaxThrottled), "budget: highest throttled share of periods (5% or 0.05)")
	durationVar(fl, &f.maxDelay, "max-delay", 0, "budget: highest p99 added delay (0: none)")
	deprecatedAlias(cmd, "max-delay-p99", "max-delay")
	durationVar(fl, &f.timeout, "timeout", 2*time.Minute, "give up on Prometheus and the agents after this long")
	fl.BoolVar(&f.verbose, "verbose", false, "also list the containers within budget")
	boolShorthandAlias(cmd, "v", "verbose") // -v is --version at the root
	fl.BoolVar(&f.allowMissing, "allow-missing-demand", false, "list a container with a limit and no measured demand as not checked, instead of exit 2")
	fl.BoolVar(&f.lint, "lint", false, "check without demand what needs no history (request above limit, quota under 1ms, limit without request, QoS change against --base)")
	fl.StringArrayVar(&f.base, "base", nil, "with --lint: the manifests before the change, to find QoS class changes (repeat)")
	fl.StringVarP(&f.output, "output", "o", "table", "table or json")
	formatAliasVar(cmd, &f.output, "json", "json")
	return cmd
}

func runCheck(cmd *cobra.Command, args []string, f checkFlags) error {
	if f.lint {
		return runLint(cmd, args, f)
	}
	if len(f.base) > 0 {
		return usagef("--base goes with --lint")
	}
	if err := f.checkSource(); err != nil {
		return err
	}
	maxThr, err := parseRatio(f.maxThrottled)
	if err != nil {
		return usagef("--max-throttled %v", err)
	}
	ms, err := fleet.ReadManifests(args, cmd.InOrStdin(), f.namespace)
	if err != nil {
		return usagef("%v", err)
	}
	ctx, cancel := contextWithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	ev, err := fleet.NewEvaluator(ctx, &http.Client{}, fleet.Source{Prometheus: f.prometheus, Agent: f.agent, Demand: f.demand, Target: f.target})
	var de *fleet.DemandError
	switch {
	case (errors.Is(err, fleet.ErrTargets) || errors.Is(err, fleet.ErrNoSuchTarget)):
		return usagef("--target-label: %v", err)
	case errors.As(err, &de) && de.Path == f.demand:
		return usagef("--demand %v", err)
	case err != nil:
		return err
	}
	res, pods, err := checkAll(ctx, ms, ev, fleet.Budget{MaxThrottled: maxThr, MaxDelayP99: f.maxDelay})
	if err != nil {
		return err
	}
	if err := writeCheck(cmd.OutOrStdout(), res, pods, f); err != nil {
		return err
	}
	if missing := fleet.MissingDemand(res); len(missing) > 0 && !f.allowMissing {
		return missingDemand(missing)
	}
	if missing := fleet.MissingPodDemand(pods); len(missing) > 0 && !f.allowMissing {
		return missingPodDemand(missing)
	}
	if fleet.Violated(res) || fleet.PodsViolated(pods) {
		return exitError{ExitOver, errors.New("check: proposed limits over budget (see above)")}
	}
	return nil
}

// checkAll checks the containers' and the pods' limits; a demand that
// cannot be read is bad input (exit 2).
func checkAll(ctx context.Context, ms []fleet.ManifestContainer, ev fleet.Evaluator, b fleet.Budget) ([]fleet.ContainerCheck, []fleet.PodCheck, error) {
	var de *fleet.DemandError
	res, err := fleet.Check(ctx, ms, ev, b)
	if errors.As(err, &de) {
		return nil, nil, usagef("%v", err)
	}
	if err != nil {
		return nil, nil, err
	}
	pods, err := fleet.CheckPods(ctx, ms, ev, b)
	if errors.As(err, &de) {
		return nil, nil, usagef("%v", err)
	}
	return res, pods, err
}

// missingPodDemand is the error of pod-level limits whose summed demand
// could not be replayed: exit 2, one line naming the first.
func missingPodDemand(missing []fleet.PodCheck) error {
	m := missing[0]
	more := ""
	if len(missing) > 1 {
		more = fmt.Sprintf(" (and %d more pods)", len(missing)-1)
	}
	return exitError{ExitUsage, fmt.Errorf("check: %s:%d: %s: %s%s: fix the demand source, or pass --allow-missing-demand", m.File, m.Line, m.Workload, m.Skip, more)}
}

// missingDemand is the error of containers with a limit and no measured
// demand: exit 2, one line naming the first and where demand was looked for.
func missingDemand(missing []fleet.ContainerCheck) error {
	m := missing[0]
	more := ""
	if len(missing) > 1 {
		more = fmt.Sprintf(" (and %d more containers)", len(missing)-1)
	}
	return exitError{ExitUsage, fmt.Errorf("check: %s:%d: %s/%s: %s%s: fix the demand source, or pass --allow-missing-demand", m.File, m.Line, m.Workload, m.Container, m.Skip, more)}
}

// runLint is check --lint: no demand, the findings that need none.
func runLint(cmd *cobra.Command, args []string, f checkFlags) error {
	if f.prometheus != "" || f.agent != "" || f.demand != "" {
		return usagef("check --lint uses no demand: drop --prometheus, --agent and --demand, or run check without --lint")
	}
	var base []fleet.ManifestContainer
	if len(f.base) > 0 {
		var err error
		if base, err = fleet.ReadManifests(f.base, cmd.InOrStdin(), f.namespace); err != nil {
			return usagef("--base: %v", err)
		}
	}
	fs, sum, err := fleet.Lint(args, cmd.InOrStdin(), f.namespace, base)
	if err != nil {
		return usagef("%v", err)
	}
	if f.output == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		if fs == nil {
			fs = []fleet.Finding{}
		}
		if err := enc.Encode(schemas.Doc(schemas.KindLintResult, struct {
			Findings []fleet.Finding `json:"findings"`
		}{fs})); err != nil {
			return err
		}
	} else if err := fleet.WriteLint(cmd.OutOrStdout(), fs, sum); err != nil {
		return err
	}
	if len(fs) > 0 {
		return exitError{ExitOver, fmt.Errorf("check --lint: %d findings (see above)", len(fs))}
	}
	return nil
}

// checkSource refuses anything but exactly one source of demand, and URLs
// that are not http(s).
func (f checkFlags) checkSource() error {
	n := 0
	for _, s := range []string{f.prometheus, f.agent, f.demand} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return usagef("check: give one source of measured demand: --prometheus URL, --agent URL or --demand DIR")
	}
	return checkURLs(f.prometheus, f.agent)
}

// writeCheck writes the containers' outcomes and, after them, the pods'
// (pod-level limits; none: nothing more, in the table and in JSON).
func writeCheck(out io.Writer, res []fleet.ContainerCheck, pods []fleet.PodCheck, f checkFlags) error {
	if f.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if res == nil {
			res = []fleet.ContainerCheck{}
		}
		return enc.Encode(schemas.Doc(schemas.KindCheckResult, struct {
			Containers []fleet.ContainerCheck `json:"containers"`
			Pods       []fleet.PodCheck       `json:"pods,omitempty"`
		}{res, pods}))
	}
	if err := fleet.WriteCheck(out, res, f.verbose); err != nil {
		return err
	}
	return fleet.WritePods(out, pods, f.verbose)
}
