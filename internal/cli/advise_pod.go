package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/fleet"
	"github.com/throttlelab/throttlelab/k8s"
	"github.com/throttlelab/throttlelab/k8s/resize"
	"github.com/throttlelab/throttlelab/schemas"
)

// checkAdvisePodFlags refuses the flags and arguments advise --demand DIR
// does not take, and --yes, --kubeconfig, --context without --apply.
func checkAdvisePodFlags(cmd *cobra.Command, args []string, f adviseFlags) error {
	fl := cmd.Flags()
	for _, name := range []string{"pid", "cgroup", "pod", "csv", "config", "instance", "limit", "grid", "all", "details", "html", "save-csv", "wall-clock",
		"prometheus", "agent", "namespace", "target-label"} {
		if fl.Changed(name) {
			return usagef("--demand DIR advises one pod from its containers' CSVs: drop --%s", name)
		}
	}
	if len(args) > 0 {
		return usagef("--demand DIR takes no RESULTS_DIR (got %s)", args[0])
	}
	if f.fleet.yes && !f.fleet.apply {
		return usagef("--yes goes with --apply")
	}
	if !f.fleet.apply && (f.fleet.kubeconfig != "" || f.fleet.context != "") {
		return usagef("--kubeconfig and --context go with --apply")
	}
	if f.fleet.output == "csv" {
		return usagef("-o csv goes with --prometheus or --agent: a pod's advice writes table, json or patch")
	}
	return nil
}

// runAdvisePod is advise --demand DIR: one pod's containers' recorded
// demand, per-container limits against one pod-level limit and both.
func runAdvisePod(cmd *cobra.Command, args []string, f adviseFlags) error {
	if err := checkAdvisePodFlags(cmd, args, f); err != nil {
		return err
	}
	req, err := adviseRequest(f)
	if err != nil {
		return err
	}
	if len(req.Periods) > 1 {
		return usagef("--period: a pod's advice takes one period (the kubelet gives the pod and its containers the same)")
	}
	pd, err := fleet.ReadPodDemand(f.demandDir)
	var de *fleet.DemandError
	if errors.As(err, &de) {
		return usagef("--demand %v", err)
	}
	if err != nil {
		return err
	}
	if f.cores > 0 {
		for _, d := range pd.Demands {
			d.Cores = f.cores
		}
	}
	a, err := advise.AdvisePod(pd, advise.PodRequest{Target: req.Target, Period: slices.Min(req.Periods), Phases: f.phases})
	switch {
	case errors.Is(err, cfs.ErrTooShort):
		return usagef("--demand %s: %v", f.demandDir, err)
	case err != nil:
		return err
	case f.fleet.apply:
		if err := advise.WritePodText(cmd.OutOrStdout(), a); err != nil {
			return err
		}
		return applyPodLevel(cmd, f.fleet, f.demandDir, a)
	case f.fleet.output == "json":
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(schemas.Doc(schemas.KindPodAdvice, a))
	case f.fleet.output == "patch":
		return fleet.WritePodPatch(cmd.OutOrStdout(), f.demandDir, a)
	}
	return advise.WritePodText(cmd.OutOrStdout(), a)
}

// applyPodLevel resizes the pod-level limit of the cheapest setting in
// place on every running pod of the workload the demand directory names
// (DIR/NAMESPACE/WORKLOAD), as advise --prometheus --apply resizes
// containers: a server-side dry run unless --yes, all or nothing at
// validation. A setting without a pod-level limit applies nothing.
func applyPodLevel(cmd *cobra.Command, f fleetFlags, dir string, a *advise.PodAdvice) error {
	o := a.Option(a.Cheapest)
	switch {
	case o == nil:
		return errors.New("--apply: no setting meets the target: nothing to apply")
	case o.PodLimitMilli <= 0:
		return fmt.Errorf("--apply: the cheapest setting is %s limits, without a pod-level limit: --demand --apply resizes a pod-level limit only; apply the containers' limits with -o patch", o.Setting)
	}
	cfg, err := k8s.RESTConfig(f.kubeconfig, f.context)
	if err != nil {
		return usagef("--apply: %v", err)
	}
	ns, name := filepath.Base(filepath.Dir(filepath.Clean(dir))), filepath.Base(filepath.Clean(dir))
	pods, err := resize.WorkloadPods(cmd.Context(), cfg, ns, name)
	var np *resize.NoPods
	if errors.As(err, &np) {
		return usagef("--apply: %v", err)
	}
	if err != nil {
		return fmt.Errorf("--apply: %w", err)
	}
	rows := make([]*fleet.Resize, len(pods))
	for i, p := range pods {
		rows[i] = &fleet.Resize{Namespace: ns, Pod: p, FromLimitMilli: -1, ToLimitMilli: o.PodLimitMilli}
	}
	if o.Setting == advise.PodBoth {
		fmt.Fprintln(cmd.ErrOrStderr(), "--apply resizes the pod-level limit only: the containers' own limits of this setting are in -o patch")
	}
	res, err := resize.Resize(cmd.Context(), cfg, resizeRows(rows), f.yes)
	return resized(cmd, rows, res, err, f.yes)
}
