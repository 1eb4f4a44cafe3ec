package cli

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/fleet"
)

type checkFlags struct {
	prometheus, agent, demand string
	namespace, target         string
	maxThrottled              string
	maxDelay, timeout         time.Duration
	verbose, strict, json     bool
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

Each replica is predicted; the worst one counts. Exit status 1 when any
container is over budget, with one line per violation:
  FILE:LINE: NAMESPACE/KIND/NAME/CONTAINER: predicted X vs budget Y
A container without a limit, or without measured demand, is listed as not
checked (exit 1 for those too with --strict). Bad input (not YAML, not a
Kubernetes object, a bad quantity, a bad CSV) exits 2.`,
		Example: `  kustomize build overlays/prod | throttlelab check --prometheus http://prometheus:9090 -
  helm template shop ./chart | throttlelab check --prometheus $PROM --max-throttled 2% --max-delay-p99 20ms -
  throttlelab check deploy/ --demand recorded/`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("check: give manifests: files, directories, or - for stdin (see --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runCheck(cmd, args, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.prometheus, "prometheus", "", "measured demand: the agents' series in this Prometheus (base URL)")
	fl.StringVar(&f.agent, "agent", "", "measured demand: this throttlelab agent (base URL)")
	fl.StringVar(&f.demand, "demand", "", "measured demand: recorded CSVs, DIR/NAMESPACE/WORKLOAD/CONTAINER.csv")
	fl.StringVarP(&f.namespace, "namespace", "n", "default", "the namespace of objects that name none")
	fl.StringVar(&f.target, "target", "", "with --prometheus: the agents' target label, when they have several")
	fl.StringVar(&f.maxThrottled, "max-throttled", "5%", "budget: highest throttled share of periods (5% or 0.05)")
	durationVar(fl, &f.maxDelay, "max-delay-p99", 0, "budget: highest p99 added delay (0: none)")
	durationVar(fl, &f.timeout, "timeout", 2*time.Minute, "give up on Prometheus and the agents after this long")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "also list the containers within budget")
	fl.BoolVar(&f.strict, "strict", false, "exit 1 also when a container with a limit could not be checked (no measured demand, no such container)")
	fl.BoolVar(&f.json, "json", false, "print the outcomes as JSON")
	return cmd
}

func runCheck(cmd *cobra.Command, args []string, f checkFlags) error {
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
	if errors.Is(err, fleet.ErrTargets) {
		return usagef("%v", err)
	}
	if err != nil {
		return err
	}
	res, err := fleet.Check(ctx, ms, ev, fleet.Budget{MaxThrottled: maxThr, MaxDelayP99: f.maxDelay})
	var de *fleet.DemandError
	if errors.As(err, &de) {
		return usagef("%v", err)
	}
	if err != nil {
		return err
	}
	if err := writeCheck(cmd.OutOrStdout(), res, f); err != nil {
		return err
	}
	switch {
	case fleet.Violated(res):
		return exitError{1, errors.New("check: proposed limits over budget (see above)")}
	case f.strict && fleet.Unchecked(res):
		return exitError{1, errors.New("check --strict: containers with a limit not checked (see above)")}
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

func writeCheck(out io.Writer, res []fleet.Outcome, f checkFlags) error {
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return fleet.WriteCheck(out, res, f.verbose)
}
