package fleet

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/fleet/fleettest"
)

// podSum is 60 s of a pod's summed demand at 10 ms: an app at 0.44 cores
// on average (1.5 cores for 30 ms every 200 ms, 43/170 core between) and a
// proxy sidecar at 0.2 cores.
func podSum() *advise.Demand {
	n := 6000
	at := make([]time.Duration, n+1)
	use := make([]time.Duration, n+1)
	for i := 1; i <= n; i++ {
		t := time.Duration(i) * 10 * time.Millisecond
		app := 43.0 / 170
		if (t-10*time.Millisecond)%(200*time.Millisecond) < 30*time.Millisecond {
			app = 1.5
		}
		at[i] = t
		use[i] = use[i-1] + time.Duration((app+0.2)*float64(10*time.Millisecond))
	}
	return cfs.FromSamples(at, use)
}

const podCgroup = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podabcdef01_2345_4678_9abc_def012345678.slice"

// podAgent serves a node whose pod web-7d9f8c6b5d-abcde (Deployment web)
// has an app and a proxy without limits under a pod-level 400m, and the
// pod's own entry with the summed demand.
func podAgent(t *testing.T) string {
	owner := func(c fleettest.Container) fleettest.Container {
		c.Namespace, c.Pod, c.OwnerKind, c.OwnerName = "shop", "web-7d9f8c6b5d-abcde", "ReplicaSet", "web-7d9f8c6b5d"
		return c
	}
	a := fleettest.Agent(t, "node-a", []fleettest.Container{
		owner(fleettest.Container{Container: "app", Demand: fleettest.Bursty(60, 0.25, 1.5, 30*time.Millisecond, 1)}),
		owner(fleettest.Container{Container: "proxy", Demand: fleettest.Bursty(60, 0.2, 0.2, 0, 2)}),
		owner(fleettest.Container{PodLevel: true, LimitMilli: 400, Demand: podSum()}),
	})
	return a.URL
}

func podManifestContainers(limit int64) []ManifestContainer {
	w := Workload{Namespace: "shop", Kind: "Deployment", Name: "web"}
	return []ManifestContainer{
		{File: "web.yaml", Line: 13, Workload: w, Container: "app", PodLimitMilli: limit, PodLimitLine: 10},
		{File: "web.yaml", Line: 15, Workload: w, Container: "proxy", PodLimitMilli: limit, PodLimitLine: 10},
	}
}

// check --agent on a pod-level limit checks it on the pod's own series:
// 400m over 0.64 cores summed is over budget, naming the pod's limit; 2
// CPUs are not. The pod's entry is not one of the containers.
func TestCheckPodsFromAgent(t *testing.T) {
	ctx := context.Background()
	url := podAgent(t)
	ev, err := NewEvaluator(ctx, http.DefaultClient, Source{Agent: url})
	if err != nil {
		t.Fatal(err)
	}
	m := ev.(*Measured)
	if len(m.Containers) != 2 || len(m.Pods) != 1 || m.Pods[0].Container != "" {
		t.Fatalf("%d containers and %d pods read, want 2 and 1 (container \"\")", len(m.Containers), len(m.Pods))
	}
	res, err := CheckPods(ctx, podManifestContainers(400), ev, Budget{MaxThrottled: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	WritePods(&out, res, false)
	if !PodsViolated(res) || res[0].Prediction.ThrottledRatio < 0.9 || !strings.Contains(out.String(), "web.yaml:10: shop/deployment/web: pod web (pod-level 400m): predicted throttled ") ||
		!strings.Contains(out.String(), "pod web-7d9f8c6b5d-abcde's own series, exported prediction at=current") {
		t.Errorf("pod-level 400m from the agent: %+v\n%s", res, out.String())
	}
	t.Logf("400m: %+v %s", res[0].Prediction, res[0].Source)
	res, err = CheckPods(ctx, podManifestContainers(2000), ev, Budget{MaxThrottled: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if PodsViolated(res) || len(MissingPodDemand(res)) != 0 || !res[0].Prediction.Known || !strings.Contains(res[0].Source, "/evaluate") {
		t.Errorf("pod-level 2 from the agent: %+v", res)
	}

	// A workload whose running pod has no pod-level limit: not checked,
	// saying so.
	other := podManifestContainers(400)
	for i := range other {
		other[i].Workload.Name = "api"
	}
	res, err = CheckPods(ctx, other, ev, Budget{MaxThrottled: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if len(MissingPodDemand(res)) != 1 || !strings.Contains(res[0].Skip, "no pod-level series of deployment api in namespace shop") {
		t.Errorf("a pod without pod series: %+v", res)
	}
}

// Through Prometheus: the pod's series have container "" (cAdvisor's
// pod-level convention); a scrape that gave them the target's container
// label is undone by the pod's cgroup. What the agent did not export is
// asked of it.
func TestCheckPodsFromPrometheus(t *testing.T) {
	ctx := context.Background()
	url := podAgent(t)
	labels := func(name string, kv ...string) map[string]string {
		m := map[string]string{"__name__": name, "namespace": "shop", "pod": "web-7d9f8c6b5d-abcde", "container": "throttlelab-agent", "job": "agents", "instance": "10.0.0.5:9101"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	pr := podSum()
	evs, err := advise.Evaluate(pr, []advise.Point{{LimitMilli: 400, Period: 100 * time.Millisecond}}, advise.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	ss := []Sample{
		{labels("throttlelab_container_info", "cgroup", podCgroup, "owner_kind", "ReplicaSet", "owner_name", "web-7d9f8c6b5d", "node", "node-a"), 1},
		{labels("throttlelab_container_cpu_limit_cores"), 0.4},
		{labels("throttlelab_predicted_throttled_ratio", "at", "current", "target", "throttled=0.01"), evs[0].ThrottledRatio},
		{labels("throttlelab_predicted_delay_p99_seconds", "at", "current", "target", "throttled=0.01"), evs[0].DelayP99Ms / 1000},
		{labels("throttlelab_demand_window_seconds"), 60},
		{labels("throttlelab_container_info", "container", "app", "cgroup", podCgroup+"/cri-containerd-d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4.scope", "owner_kind", "ReplicaSet", "owner_name", "web-7d9f8c6b5d"), 1},
	}
	all, err := fromSamples(ss, "http://prom", PromOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cs, pods := splitPods(all)
	if len(cs) != 1 || cs[0].Container != "app" || len(pods) != 1 || pods[0].Container != "" || pods[0].LimitMilli != 400 {
		t.Fatalf("containers %+v, pods %+v: want app and the pod (container \"\")", cs, pods)
	}
	m := &Measured{Containers: cs, Pods: pods, Client: http.DefaultClient, Agents: map[string]string{"agents/10.0.0.5:9101": url}, Prometheus: "http://prom"}
	res, err := CheckPods(ctx, podManifestContainers(400), m, Budget{MaxThrottled: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if !PodsViolated(res) || !strings.Contains(res[0].Source, "exported prediction at=current") {
		t.Errorf("pod-level 400m through Prometheus: %+v", res)
	}
	res, err = CheckPods(ctx, podManifestContainers(2000), m, Budget{MaxThrottled: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if PodsViolated(res) || !res[0].Prediction.Known || !strings.Contains(res[0].Source, "agent "+url+" /evaluate") {
		t.Errorf("pod-level 2 through Prometheus: %+v", res)
	}
}
