// Command check judges a results directory of examples/limits.yaml run with
// the kubernetes backend on the make e2e-k8s rig: the backend's records are
// all there, the limited pods' cgroups had the 0.25-CPU quota and were
// throttled, and the limited p99 is above the unlimited p99, as on the
// local backend. It prints the figures and exits 1 on a failed check.
//
//	go run ./hack/e2e-k8s/check -dir RESULTS
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/throttlelab/throttlelab/record"
)

func main() {
	dir := flag.String("dir", "", "results directory")
	flag.Parse()
	if err := check(*dir); err != nil {
		fmt.Fprintf(os.Stderr, "e2e-k8s check: FAILED: %v\n", err)
		os.Exit(1)
	}
}

func check(dir string) error {
	e, env, runs, err := record.ReadResults(dir)
	if err != nil {
		return err
	}
	if env.Backend != "kubernetes" || env.Kubernetes == nil {
		return fmt.Errorf("env.json: backend %q, kubernetes %v", env.Backend, env.Kubernetes)
	}
	if len(runs) != len(e.Runs()) {
		return fmt.Errorf("%d of %d runs finished", len(runs), len(e.Runs()))
	}
	for _, r := range runs {
		var pods []record.KubePod
		b, err := os.ReadFile(filepath.Join(dir, "runs", r.ID, "pods.json"))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &pods); err != nil {
			return err
		}
		for _, p := range pods {
			wantQuota := int64(-1)
			if r.Config == "limited" {
				wantQuota = 25000
			}
			if p.QuotaUsec != wantQuota || p.PeriodUsec != 100000 {
				return fmt.Errorf("run %s: pod %s had quota %d/%d in its cgroup, want %d/100000", r.ID, p.Pod, p.QuotaUsec, p.PeriodUsec, wantQuota)
			}
		}
		if r.Config == "limited" && r.Total.ThrottledPeriods == 0 {
			return fmt.Errorf("run %s: the limited pods were never throttled (cpu.stat %+v)", r.ID, r.Total)
		}
		fmt.Printf("run %s: %d requests, p99 %.1f ms, throttled %d of %d periods, pods %d, quota %d/%d\n", r.ID, r.Summary.Requests,
			r.Summary.Latency.P99, r.Total.ThrottledPeriods, r.Total.Periods, len(pods), pods[0].QuotaUsec, pods[0].PeriodUsec)
	}
	s := record.Summarize(e, runs)
	var lim, unl *record.ConfigSummary
	for i := range s.Configs {
		switch s.Configs[i].Config {
		case "limited":
			lim = &s.Configs[i]
		case "unlimited":
			unl = &s.Configs[i]
		}
	}
	if lim == nil || unl == nil {
		return fmt.Errorf("no limited or unlimited config in the summary")
	}
	fmt.Printf("unlimited p99 %.1f ms, limited p99 %.1f ms (%.2fx), limited throttled %.1f%% of periods\n", unl.P99Ms, lim.P99Ms, lim.P99Ms/unl.P99Ms, lim.ThrottledPct)
	if !(lim.P99Ms > unl.P99Ms) {
		return fmt.Errorf("limited p99 %.1f ms is not above unlimited p99 %.1f ms", lim.P99Ms, unl.P99Ms)
	}
	fmt.Println("e2e-k8s check: passed")
	return nil
}
