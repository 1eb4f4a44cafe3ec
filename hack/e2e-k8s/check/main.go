// Command check judges a results directory of examples/limits.yaml run with
// the kubernetes backend on the make e2e-k8s rig: the backend's records are
// all there, the limited pods' cgroups had the 0.25-CPU quota and were
// throttled, and the limited p99 is above the unlimited p99, as on the
// local backend. It prints the figures and exits 1 on a failed check.
//
//	go run ./hack/e2e-k8s/check -dir RESULTS
//
// With -pod it judges examples/pod-limit.yaml instead: the pod config ran
// as one pod whose containers had their own 600m quotas, its pod cgroup
// (read through the kubelet's cAdvisor) had the pod-level 800m quota and
// was throttled, and the per-container config's pods had 400m each.
//
//	go run ./hack/e2e-k8s/check -pod -dir RESULTS
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/throttlelab/throttlelab/cgroup"
	"github.com/throttlelab/throttlelab/record"
)

// hostPodCgroups is a directory of the rig's last readings of each pod
// cgroup with a quota (hack/e2e-k8s.sh's watch_pod_cgroups).
var hostPodCgroups string

func main() {
	dir := flag.String("dir", "", "results directory")
	pod := flag.Bool("pod", false, "judge a run of examples/pod-limit.yaml")
	flag.StringVar(&hostPodCgroups, "host-pod-cgroups", "", "with -pod: the rig's readings of the pod cgroups from the host, for a node the API server cannot proxy to")
	flag.Parse()
	run := check
	if *pod {
		run = checkPod
	}
	if err := run(*dir); err != nil {
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

// checkPod judges a results directory of examples/pod-limit.yaml.
func checkPod(dir string) error {
	e, env, runs, err := record.ReadResults(dir)
	if err != nil {
		return err
	}
	if env.Backend != "kubernetes" || len(runs) != len(e.Runs()) {
		return fmt.Errorf("backend %q, %d of %d runs finished", env.Backend, len(runs), len(e.Runs()))
	}
	for _, r := range runs {
		var pods []record.KubePod
		if err := readJSON(filepath.Join(dir, "runs", r.ID, record.PodsFile), &pods); err != nil {
			return err
		}
		want, names := int64(40000), map[string]bool{}
		if r.Config == "pod" {
			want = 60000
		}
		for _, p := range pods {
			names[p.Pod] = true
			if p.QuotaUsec != want || p.PeriodUsec != 100000 {
				return fmt.Errorf("run %s: a container of pod %s had quota %d/%d, want %d/100000", r.ID, p.Pod, p.QuotaUsec, p.PeriodUsec, want)
			}
		}
		line := fmt.Sprintf("run %s: %d requests, p99 %.1f ms, containers throttled %d of %d periods, %d containers in %d pods",
			r.ID, r.Summary.Requests, r.Summary.Latency.P99, r.Total.ThrottledPeriods, r.Total.Periods, len(pods), len(names))
		if r.Config != "pod" {
			if len(pods) != 2 || len(names) != 2 {
				return fmt.Errorf("%s: want 2 containers in 2 pods", line)
			}
			fmt.Println(line)
			continue
		}
		if len(pods) != 2 || len(names) != 1 {
			return fmt.Errorf("%s: want 2 containers in 1 pod", line)
		}
		var g record.PodGroup
		if err := readJSON(filepath.Join(dir, "runs", r.ID, record.PodGroupFile), &g); err != nil {
			if !errors.Is(err, os.ErrNotExist) || hostPodCgroups == "" {
				return fmt.Errorf("run %s: the pod group: %w", r.ID, err)
			}
			// The backend could not read it (a node on loopback): the
			// host's reading of the pod's cgroup, from its start.
			fmt.Printf("run %s: no %s (the backend could not reach cAdvisor), the host's reading instead\n", r.ID, record.PodGroupFile)
			if g, err = hostPodGroup(hostPodCgroups); err != nil {
				return fmt.Errorf("run %s: %w", r.ID, err)
			}
		}
		use := fmt.Sprintf(", %.3f cores over the load, window %.1f s", g.UsageCores, g.WindowSec)
		if g.WindowSec == 0 {
			use = " since the pod started (the host's reading)"
		}
		fmt.Printf("%s; pod group %s: quota %d/%d, throttled %d of %d periods (%.1f ms)%s\n", line,
			g.Group, g.QuotaUsec, g.PeriodUsec, g.CPUStat.ThrottledPeriods, g.CPUStat.Periods, float64(g.CPUStat.ThrottledUsec)/1000, use)
		if g.QuotaUsec != 80000 || g.PeriodUsec != 100000 {
			return fmt.Errorf("run %s: the pod group had quota %d/%d, want the pod-level 80000/100000", r.ID, g.QuotaUsec, g.PeriodUsec)
		}
		if g.CPUStat.ThrottledPeriods == 0 || g.CPUStat.Periods == 0 {
			return fmt.Errorf("run %s: the pod group was never throttled (%+v)", r.ID, g.CPUStat)
		}
	}
	fmt.Println("e2e-k8s check (pod-level): passed")
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// hostPodGroup reads the one pod cgroup with a quota of 80000 among the
// rig's readings: "group DIR", "quota QUOTA PERIOD" (v1) or "quota max
// PERIOD" (v2), then its cpu.stat.
func hostPodGroup(dir string) (record.PodGroup, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	var found []record.PodGroup
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return record.PodGroup{}, err
		}
		var g record.PodGroup
		stat := &bytes.Buffer{}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, " ")
			switch k {
			case "group":
				g.Group = v
			case "quota":
				if _, err := fmt.Sscan(v, &g.QuotaUsec, &g.PeriodUsec); err != nil {
					return g, fmt.Errorf("%s: quota %q: %w", f, v, err)
				}
			default:
				stat.WriteString(line + "\n")
			}
		}
		if g.CPUStat, err = cgroup.ParseCPUStat(stat.Bytes()); err != nil {
			return g, fmt.Errorf("%s: %w", f, err)
		}
		if g.QuotaUsec == 80000 {
			found = append(found, g)
		}
	}
	if len(found) != 1 {
		return record.PodGroup{}, fmt.Errorf("%d pod cgroups with the pod-level quota 80000 among the host's readings (%d files in %s), want 1", len(found), len(files), dir)
	}
	return found[0], nil
}
