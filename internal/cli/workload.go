package cli

import (
	"context"
	"errors"
	"net/http"
	"os"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/fleet"
	"github.com/throttlelab/throttlelab/k8s/workload"
)

// workloadFlags select workloads as kubectl does (advise and top).
type workloadFlags struct {
	selector      string
	allNamespaces bool
}

func addWorkloadFlags(cmd *cobra.Command, f *workloadFlags) {
	fl := cmd.Flags()
	fl.StringVarP(&f.selector, "selector", "l", "", "workloads: those with pods this label selector matches (app=web)")
	fl.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "workloads: in every namespace")
}

// workloadArgs reports whether advise's arguments name workloads
// (deploy/web ...) rather than a results directory.
func workloadArgs(args []string) bool {
	if len(args) == 0 {
		return false
	}
	if _, err := os.Stat(args[0]); err == nil {
		return false
	}
	for _, a := range args {
		if !workload.IsRef(a) {
			return false
		}
	}
	return true
}

// workloadExit turns the workload package's errors into exit statuses: 2
// for bad input (no such workload), 3 for a source that could not be read
// (the API server, RBAC, an agent, Prometheus).
func workloadExit(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, workload.ErrBadRef) || errors.Is(err, workload.ErrNotFound):
		return usagef("%v", err)
	case errors.Is(err, workload.ErrForbidden) || errors.Is(err, workload.ErrNoAgent) || errors.Is(err, workload.ErrUnreachable) ||
		errors.Is(err, fleet.ErrUnreachable) || errors.Is(err, fleet.ErrNoData):
		return exitError{code: 3, err: err}
	}
	return err
}

// runAdviseWorkloads is advise deploy/NAME ..., -l or -A: the workloads'
// advice from their nodes' agents through the API server, or with
// --prometheus from Prometheus. One workload container: advise's answer;
// more: the fleet table.
func runAdviseWorkloads(cmd *cobra.Command, args []string, f adviseFlags) error {
	ff := f.fleet
	if ff.agent != "" || ff.apply {
		return usagef("workloads by name go with the agents through the API server or --prometheus, not --agent or --apply")
	}
	if err := outputFormat(cmd, &ff.output, "table", "json", "csv"); err != nil {
		return err
	}
	q := workload.Query{Namespace: ff.namespace, AllNamespaces: f.workloads.allNamespaces, Selector: f.workloads.selector}
	for _, a := range args {
		r, err := workload.ParseRef(a)
		if err != nil {
			return usagef("%v (advise takes one RESULTS_DIR, or workloads)", err)
		}
		q.Refs = append(q.Refs, r)
	}
	ctx, cancel := contextWithTimeout(cmd.Context(), ff.timeout)
	defer cancel()
	rows, views, err := adviseWorkloads(ctx, ff, q)
	if err != nil {
		return workloadExit(err)
	}
	ms := fleet.Group(rows)
	if len(ms) == 1 && ff.output == "table" && views != nil {
		return workload.WriteAnswer(cmd.OutOrStdout(), ms[0], views)
	}
	return fleet.Write(cmd.OutOrStdout(), ff.output, ms)
}

func adviseWorkloads(ctx context.Context, ff fleetFlags, q workload.Query) ([]*fleet.Container, map[string]*fleet.AgentContainer, error) {
	cfg, ns, err := workload.Connect(ff.kubeconfig, ff.context)
	if err != nil {
		return nil, nil, exitError{code: 3, err: err}
	}
	if q.Namespace == "" {
		q.Namespace = ns
	}
	r, err := workload.NewReader(cfg)
	if err != nil {
		return nil, nil, err
	}
	ws, err := workload.Resolve(ctx, r.Clientset(), q)
	if err != nil {
		return nil, nil, err
	}
	if ff.prometheus == "" {
		return r.Advice(ctx, ws)
	}
	promNS := q.Namespace
	if q.AllNamespaces {
		promNS = ""
	}
	all, err := fleet.Read(ctx, &http.Client{}, fleet.Source{Prometheus: ff.prometheus, Namespace: promNS, Target: ff.target})
	if err != nil {
		return nil, nil, err
	}
	return workload.Select(all, ws), nil, nil
}

// runTopCluster is top -A or -n NS: every container the agents of the
// cluster summarise, the most throttled (or delayed) first, from their
// predictions at the current limits over their windows.
func runTopCluster(cmd *cobra.Command, f topFlags) error {
	by := f.sort
	if !cmd.Flags().Changed("sort") {
		by = workload.ByThrottled
	}
	if by != workload.ByThrottled && by != workload.ByDelay {
		return usagef("--sort %q: with -A or -n give %s or %s", by, workload.ByThrottled, workload.ByDelay)
	}
	if err := outputFormat(cmd, &f.output, "table", "json"); err != nil {
		return err
	}
	cfg, _, err := workload.Connect(f.kubeconfig, f.context)
	if err != nil {
		return exitError{code: 3, err: err}
	}
	r, err := workload.NewReader(cfg)
	if err != nil {
		return err
	}
	rows, readErr := r.All(cmd.Context())
	if f.namespace != "" && !f.allNamespaces {
		var in []*fleet.Container
		for _, c := range rows {
			if c.Namespace == f.namespace {
				in = append(in, c)
			}
		}
		rows = in
	}
	if err := workload.SortTop(rows, by); err != nil {
		return usagef("--sort: %v", err)
	}
	if len(rows) > 0 || readErr == nil {
		if f.output == "json" {
			err = workload.WriteTopJSON(cmd.OutOrStdout(), rows)
		} else {
			err = workload.WriteTopTable(cmd.OutOrStdout(), rows)
		}
		if err != nil {
			return err
		}
	}
	return workloadExit(readErr)
}
