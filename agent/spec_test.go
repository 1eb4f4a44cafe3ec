package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/watch"
)

// TestAgentSpecBesideCgroup exports the CPU limit and request a container
// has (its cgroup's) beside its pod spec's (from the pod list): while an
// in-place resize is not applied they differ, and once the kubelet writes
// the new quota into the cgroup they agree.
func TestAgentSpecBesideCgroup(t *testing.T) {
	n := newFakeNode(t, "v2-kubepods-systemd", nil)
	id := strings.Repeat("d4", 32)
	n.a.cfg.Owners = func(context.Context) (Pods, error) {
		names := watch.NewPodNames()
		pod := watch.PodName{Namespace: "shop", Name: "cart-0"}
		names.Add("ABCDEF01-2345-4678-9ABC-DEF012345678", pod, map[string]string{id: "cart"})
		return Pods{Owners: map[watch.PodName]Owner{pod: {"StatefulSet", "cart"}}, Names: names,
			Spec: map[watch.PodName]map[string]SpecCPU{pod: {"cart": specCPUOf("150m", "400m")}}}, nil
	}
	n.a.lookupOwners(context.Background())
	n.run(2 * time.Second)
	const labels = `{container="cart",namespace="shop",pod="cart-0"}`
	_, metrics := get(t, n.a.Handler(), "/metrics")
	for _, want := range []string{
		"throttlelab_container_cpu_limit_cores" + labels + " 0.2",      // the cgroup's cpu.max: 20000 100000
		"throttlelab_container_spec_cpu_limit_cores" + labels + " 0.4", // the spec's, resized
		"throttlelab_container_spec_cpu_request_cores" + labels + " 0.15",
	} {
		if !strings.Contains(metrics, "\n"+want+"\n") {
			t.Errorf("/metrics has no %q:\n%s", want, grepLines(metrics, "cpu_limit_cores", "cpu_request_cores"))
		}
	}
	// The kubelet applies the resize.
	scope := filepath.Join(n.root, "sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podabcdef01_2345_4678_9abc_def012345678.slice/cri-containerd-"+id+".scope")
	if err := os.WriteFile(filepath.Join(scope, "cpu.max"), []byte("40000 100000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n.run(12 * time.Second)
	_, metrics = get(t, n.a.Handler(), "/metrics")
	if want := "throttlelab_container_cpu_limit_cores" + labels + " 0.4"; !strings.Contains(metrics, "\n"+want+"\n") {
		t.Errorf("after the resize, /metrics has no %q:\n%s", want, grepLines(metrics, "cpu_limit_cores"))
	}
}

func TestSpecCPUOf(t *testing.T) {
	for _, c := range []struct {
		req, lim string
		want     SpecCPU
	}{
		{"", "", SpecCPU{}},
		{"250m", "", SpecCPU{RequestMilli: 250, HasRequest: true}},
		{"", "1", SpecCPU{RequestMilli: 1000, LimitMilli: 1000, HasRequest: true, HasLimit: true}},
		{"100m", "500m", SpecCPU{RequestMilli: 100, LimitMilli: 500, HasRequest: true, HasLimit: true}},
		{"lots", "", SpecCPU{}},
	} {
		if got := specCPUOf(c.req, c.lim); got != c.want {
			t.Errorf("request %q limit %q: %+v, want %+v", c.req, c.lim, got, c.want)
		}
	}
}

func grepLines(s string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, sub := range subs {
			if strings.Contains(l, sub) && !strings.HasPrefix(l, "#") {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
