package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/fleet/fleettest"
)

// check --agent on a pod-level limit reads the pod's own series (an agent
// summarises the pod's group where it runs with a pod-level limit): the
// issue's pod (an app at 0.44 cores with 1.5-core bursts of 30 ms every
// 200 ms, a 0.2-core sidecar) at 400m exits 1 naming the pod's limit; at 2
// CPUs it exits 0.
func TestCheckPodLevelFromAgent(t *testing.T) {
	const n = 6000
	at := make([]time.Duration, n+1)
	use := make([]time.Duration, n+1)
	for i := 1; i <= n; i++ {
		tt := time.Duration(i) * 10 * time.Millisecond
		app := 43.0 / 170
		if (tt-10*time.Millisecond)%(200*time.Millisecond) < 30*time.Millisecond {
			app = 1.5
		}
		at[i], use[i] = tt, use[i-1]+time.Duration((app+0.2)*float64(10*time.Millisecond))
	}
	owner := func(c fleettest.Container) fleettest.Container {
		c.Namespace, c.Pod, c.OwnerKind, c.OwnerName = "shop", "web-7d9f8c6b5d-abcde", "ReplicaSet", "web-7d9f8c6b5d"
		return c
	}
	agent := fleettest.Agent(t, "node-a", []fleettest.Container{
		owner(fleettest.Container{Container: "app", Demand: fleettest.Bursty(60, 0.25, 1.5, 30*time.Millisecond, 1)}),
		owner(fleettest.Container{Container: "proxy", Demand: fleettest.Bursty(60, 0.2, 0.2, 0, 2)}),
		owner(fleettest.Container{PodLevel: true, LimitMilli: 400, Demand: cfs.FromSamples(at, use)}),
	})
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := runRoot(newRootCmd(), args, &out, &errb)
		return code, out.String(), errb.String()
	}
	m := podManifest(t, "400m", "")
	code, out, errs := run("check", "--agent", agent.URL, m)
	head := m + ":10: shop/deployment/web: pod web (pod-level 400m): predicted throttled "
	if code != 1 || !strings.Contains(out, head) || !strings.Contains(out, "pods: 1 checked, 1 over budget, 0 not checked\n") {
		t.Errorf("--agent, pod-level 400m: exit %d, stderr %q:\n%s\nwant exit 1 and a line starting %q", code, errs, out, head)
	}
	code, out, errs = run("check", "--verbose", "--agent", agent.URL, podManifest(t, "2", ""))
	if code != 0 || !strings.Contains(out, "pod web (pod-level 2): ok at 2 over app+proxy summed") || !strings.Contains(out, "pods: 1 checked, 0 over budget, 0 not checked\n") {
		t.Errorf("--agent, pod-level 2: exit %d %s:\n%s\nwant exit 0", code, errs, out)
	}
}
