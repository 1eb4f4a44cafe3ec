package cli

import (
	"encoding/json"
	"errors"
	"slices"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/fleet"
	"github.com/throttlelab/throttlelab/schemas"
)

// runAdvisePod is advise --demand DIR: one pod's containers' recorded
// demand, per-container limits against one pod-level limit and both.
func runAdvisePod(cmd *cobra.Command, args []string, f adviseFlags) error {
	fl := cmd.Flags()
	for _, name := range []string{"pid", "cgroup", "pod", "csv", "config", "instance", "limit", "grid", "all", "details", "html", "save-csv", "wall-clock",
		"prometheus", "agent", "namespace", "target-label", "apply", "yes", "kubeconfig", "context"} {
		if fl.Changed(name) {
			return usagef("--demand DIR advises one pod from its containers' CSVs: drop --%s", name)
		}
	}
	if len(args) > 0 {
		return usagef("--demand DIR takes no RESULTS_DIR (got %s)", args[0])
	}
	if f.fleet.output == "csv" {
		return usagef("-o csv goes with --prometheus or --agent: a pod's advice writes table, json or patch")
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
	case f.fleet.output == "json":
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(schemas.Doc(schemas.KindPodAdvice, a))
	case f.fleet.output == "patch":
		return fleet.WritePodPatch(cmd.OutOrStdout(), f.demandDir, a)
	}
	return advise.WritePodText(cmd.OutOrStdout(), a)
}
