package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/deploy"
	"github.com/throttlelab/throttlelab/fleet"
)

// agentOnRig prints what the agent's own metrics say on the rig's
// Prometheus (its CPU and memory, the samples it missed, its containers),
// and runs every panel query of the dashboard there: an error names the
// queries that came back empty.
func agentOnRig(prom, dashboard string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	one := func(q string) (float64, error) {
		ss, err := fleet.Query(ctx, http.DefaultClient, prom, q)
		if err != nil {
			return 0, err
		}
		if len(ss) != 1 {
			return 0, fmt.Errorf("%s: %d series, want 1", q, len(ss))
		}
		return ss[0].Value, nil
	}
	var vals [8]float64
	for i, q := range []string{
		`rate(process_cpu_seconds_total{job="throttlelab-agent"}[5m])`,
		`max_over_time(process_resident_memory_bytes{job="throttlelab-agent"}[5m])`,
		`increase(throttlelab_agent_samples_missed_total[5m]) / (increase(throttlelab_agent_samples_total[5m]) + increase(throttlelab_agent_samples_missed_total[5m]))`,
		`throttlelab_agent_containers`,
		`throttlelab_agent_new_containers_watched`,
		`max_over_time(throttlelab_agent_hot_containers[5m])`,
		`min_over_time(throttlelab_agent_hot_containers[5m])`,
		`count(count by (namespace, pod, container) (throttlelab_advised_cpu_limit_cores))`,
	} {
		v, err := one(q)
		if err != nil {
			return err
		}
		vals[i] = v
	}
	fmt.Printf("the agent over the last 5 min: %.4f cores (%.2f%% of one), %.0f MiB resident at most, %.2f%% of its samples missed, %.0f containers, new ones watched: %v, hot (read every 10 ms) %.0f to %.0f\n",
		vals[0], 100*vals[0], vals[1]/(1<<20), 100*vals[2], vals[3], vals[4] == 1, vals[6], vals[5])
	// Every container gets advice with sampling by need, the idle server
	// (krr's 1m, under the kubelet's minimum quota) among them. The idle
	// server goes cold after its start-up and first chunk: its periods
	// (Go's collections) stay under HotConfig.MinCores, and its start-up's
	// throttling holds nothing past it (docs/fleet.md, Which containers
	// stay cold); the burner and the agent itself stay hot.
	if vals[7] < vals[3] {
		return fmt.Errorf("%.0f of the %.0f containers advised: with sampling by need every container must get advice", vals[7], vals[3])
	}
	if vals[6] >= vals[3] {
		return fmt.Errorf("all %.0f containers hot throughout the last 5 min: the idle server must go cold (docs/fleet.md, Which containers stay cold)", vals[3])
	}
	fmt.Printf("sampling by need: %.0f of %.0f containers advised, %.0f to %.0f hot\n", vals[7], vals[3], vals[6], vals[5])
	b, err := os.ReadFile(dashboard)
	if err != nil {
		return err
	}
	qs, err := deploy.Queries(b)
	if err != nil {
		return err
	}
	var empty []string
	for _, q := range qs {
		ss, err := fleet.Query(ctx, http.DefaultClient, prom, deploy.Resolve(q, "1m"))
		if err != nil {
			return err
		}
		if len(ss) == 0 {
			empty = append(empty, q)
		}
	}
	if len(empty) > 0 {
		return fmt.Errorf("%d of the dashboard's %d panel queries returned nothing on the rig's Prometheus:\n  %s", len(empty), len(qs), strings.Join(empty, "\n  "))
	}
	fmt.Printf("the dashboard: all %d panel queries returned data on the rig's Prometheus\n", len(qs))
	return nil
}
